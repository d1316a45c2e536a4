/* co_migrations.h -- the schema migrations, embedded at build time from
 * collector/store/migrations/NNN_*.sql by co_embed_sql.py. Static data, ordered
 * by version 1..co_migrations_count; nothing to free. */
#ifndef CO_MIGRATIONS_H
#define CO_MIGRATIONS_H

#include <stddef.h>

typedef struct {
    int version;
    const char *name;
    const char *sql;
} co_migration_t;

extern const co_migration_t co_migrations[];
extern const size_t co_migrations_count;

#endif
