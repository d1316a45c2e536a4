/* pw_key.h -- fingerprints of CURVE public keys (docs/protocol.md,
 * section 1, "Keys and fingerprints").
 *
 * A fingerprint names a public key for people: "SHA256:" and the
 * SHA-256 of the key's 32 bytes in standard base64 without padding (43
 * characters), the form OpenSSH shows host keys in. The collector's
 * `parity hosts --pending`, `parity-agent --fingerprint` and
 * `parity-collector --fingerprint` all print it this way, so that an
 * operator can compare what each side says; agents pin the collector by
 * it (--collector-fingerprint).
 *
 * No I/O, no state: safe from any thread.
 */
#ifndef PW_KEY_H
#define PW_KEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PW_KEY_FP_PREFIX "SHA256:"
/* "SHA256:" + 43 base64 characters, and room for the NUL. */
#define PW_KEY_FP_LEN    50
#define PW_KEY_FP_SIZE   (PW_KEY_FP_LEN + 1)
/* A public key in Z85: 40 characters (and the NUL). */
#define PW_KEY_Z85_LEN   40

/* The fingerprint of the 32-byte public key into out. */
void pw_key_fingerprint_bin(const uint8_t key[32], char out[PW_KEY_FP_SIZE]);

/* The fingerprint of a Z85 public key (40 characters) into out. Returns
 * 0, or -1 (out empty) when z85 is not a Z85 key. */
int pw_key_fingerprint(const char *z85, char out[PW_KEY_FP_SIZE]);

/* True when text has the shape of a fingerprint: "SHA256:" and 43
 * characters of the base64 alphabet. */
bool pw_key_is_fingerprint(const char *text);

/* True when text is a public key in Z85 (40 characters that decode). */
bool pw_key_is_z85(const char *text);

#endif
