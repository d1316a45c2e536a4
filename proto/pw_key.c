/* pw_key.c -- see pw_key.h. */
#include "pw_key.h"

#include <string.h>

#include <sodium.h>
#include <zmq.h>

void
pw_key_fingerprint_bin(const uint8_t key[32], char out[PW_KEY_FP_SIZE])
{
    unsigned char digest[crypto_hash_sha256_BYTES];
    /* 43 characters and the NUL sodium writes. */
    char b64[sodium_base64_ENCODED_LEN(crypto_hash_sha256_BYTES,
             sodium_base64_VARIANT_ORIGINAL_NO_PADDING)];
    /* Idempotent and thread-safe; sodium asks for it before any call. */
    if (sodium_init() < 0) {
        out[0] = '\0';
        return;
    }
    crypto_hash_sha256(digest, key, 32);
    sodium_bin2base64(b64, sizeof b64, digest, sizeof digest,
                      sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
    memcpy(out, PW_KEY_FP_PREFIX, sizeof PW_KEY_FP_PREFIX - 1);
    memcpy(out + sizeof PW_KEY_FP_PREFIX - 1, b64, 43);
    out[PW_KEY_FP_LEN] = '\0';
}

int
pw_key_fingerprint(const char *z85, char out[PW_KEY_FP_SIZE])
{
    uint8_t key[32];
    out[0] = '\0';
    if (!pw_key_is_z85(z85) || !zmq_z85_decode(key, z85))
        return -1;
    pw_key_fingerprint_bin(key, out);
    return 0;
}

bool
pw_key_is_fingerprint(const char *text)
{
    size_t n = sizeof PW_KEY_FP_PREFIX - 1;
    if (!text || strlen(text) != PW_KEY_FP_LEN
        || strncmp(text, PW_KEY_FP_PREFIX, n) != 0)
        return false;
    for (const char *c = text + n; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
              || (*c >= '0' && *c <= '9') || *c == '+' || *c == '/'))
            return false;
    return true;
}

bool
pw_key_is_z85(const char *text)
{
    /* zmq_z85_decode checks the alphabet and the length's multiple of 5,
     * not the length: 40 is what a 32-byte key takes. */
    uint8_t key[32];
    return text && strlen(text) == PW_KEY_Z85_LEN
        && zmq_z85_decode(key, text) != NULL;
}
