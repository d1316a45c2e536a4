/* co_kinds.h -- parity.proto's enum values as the SQL text statements
 * compare stored columns with (samples.kind is Parity__SampleKind's
 * number): a statement says "kind = " CO_SQL_MEASURED, never 0, and the
 * _Static_asserts below tie each value to the generated protobuf-c enum,
 * so a renumbering in parity.proto breaks the build, not the answers.
 */
#ifndef CO_KINDS_H
#define CO_KINDS_H

#include "parity.pb-c.h"

#define CO_KIND_MEASURED     0
#define CO_KIND_WARMUP       1
#define CO_KIND_CALIBRATION  2
#define CO_KIND_ERROR        3

_Static_assert(CO_KIND_MEASURED == PARITY__SAMPLE_KIND__MEASURED,
               "samples.kind MEASURED is parity.proto's");
_Static_assert(CO_KIND_WARMUP == PARITY__SAMPLE_KIND__WARMUP,
               "samples.kind WARMUP is parity.proto's");
_Static_assert(CO_KIND_CALIBRATION == PARITY__SAMPLE_KIND__CALIBRATION,
               "samples.kind CALIBRATION is parity.proto's");
_Static_assert(CO_KIND_ERROR == PARITY__SAMPLE_KIND__ERROR,
               "samples.kind ERROR is parity.proto's");

#define CO_KINDS_STR_(x) #x
#define CO_KINDS_STR(x) CO_KINDS_STR_(x)
#define CO_SQL_MEASURED     CO_KINDS_STR(CO_KIND_MEASURED)
#define CO_SQL_WARMUP       CO_KINDS_STR(CO_KIND_WARMUP)
#define CO_SQL_CALIBRATION  CO_KINDS_STR(CO_KIND_CALIBRATION)
#define CO_SQL_ERROR        CO_KINDS_STR(CO_KIND_ERROR)

#endif
