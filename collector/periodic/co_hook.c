/* co_hook.c -- one webhook (co_hook.h). */
#include "co_hook.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "co_log.h"
#include "config.h"

struct co_hook {
    char *url;
    char quoted[300];          /* url for the logs */
    char **ring;               /* [max] */
    size_t max, head, count;
    bool stop, started, down, told_full;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    pthread_t thread;
    co_hook_counters_t c;
};

static pthread_once_t s_curl_once = PTHREAD_ONCE_INIT;
static CURLcode s_curl_init = CURLE_FAILED_INIT;

static void
s_curl_global(void)
{
    s_curl_init = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int
co_hook_check_url(const char *url, char *err, size_t errlen)
{
    const char *host = NULL;
    if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    if (!host || !*host || *host == '/' || *host == ':' ||
        strlen(url) > 2000 || strcspn(url, " \t\r\n") != strlen(url)) {
        snprintf(err, errlen, "want an http:// or https:// URL with a host, "
                 "at most 2000 bytes, no spaces");
        return -1;
    }
    return 0;
}

/* The receiver's answer is read and thrown away. */
static size_t
s_discard(char *p, size_t size, size_t n, void *ctx)
{
    (void)p;
    (void)ctx;
    return size * n;
}

/* An attempt under way ends when the hook stops (a slow receiver does
 * not hold the collector's shutdown for the attempt's timeout). */
static int
s_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c,
           curl_off_t d)
{
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return __atomic_load_n((bool *)ctx, __ATOMIC_RELAXED) ? 1 : 0;
}

/* POST body once: 0 delivered, 1 try again later, 2 refused (why said). */
static int
s_send(CURL *curl, bool *stop, const char *url, const char *body, char *why,
       size_t whylen)
{
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdr = curl_slist_append(NULL,
        "Content-Type: application/json");
    curl_easy_reset(curl);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "parity-collector/"
                     PARITY_VERSION);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)CO_HOOK_TIMEOUT_MS);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)CO_HOOK_CONNECT_TIMEOUT_MS);
    /* Threads: no signals for DNS timeouts. Only http(s), no redirects. */
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, s_discard);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, s_progress);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, stop);
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK) {
        snprintf(why, whylen, "%s", errbuf[0] ? errbuf :
                 curl_easy_strerror(rc));
        return 1;
    }
    snprintf(why, whylen, "HTTP %ld", status);
    if (status >= 200 && status < 300)
        return 0;
    if (status == 408 || status == 429 || status >= 500)
        return 1;
    return 2;
}

/* Wait ms on the hook's condition (the lock held); true when stopped. */
static bool
s_pause(co_hook_t *h, long ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!h->stop &&
           pthread_cond_timedwait(&h->wake, &h->lock, &until) != ETIMEDOUT)
        ;
    return h->stop;
}

/* One attempt's outcome, under the lock: the head delivered or refused
 * leaves the queue; the back-off doubles while the receiver is down. */
static void
s_after(co_hook_t *h, int rc, const char *why, long *backoff)
{
    char q[300];
    co_log_quote(q, sizeof q, why);
    if (rc == 1) {
        if (!h->down)
            co_log(CO_LOG_WARN, "notify_retry", "url=%s why=%s queued=%zu "
                   "(sent again every %d..%d ms until it is taken)",
                   h->quoted, q, h->count, CO_HOOK_RETRY_MIN_MS,
                   CO_HOOK_RETRY_MAX_MS);
        h->down = true;
        *backoff = *backoff * 2 > CO_HOOK_RETRY_MAX_MS ?
                   CO_HOOK_RETRY_MAX_MS : *backoff * 2;
        return;
    }
    if (rc == 0) {
        h->c.delivered++;
        if (h->down)
            co_log(CO_LOG_INFO, "notify_delivered", "url=%s after an outage; "
                   "queued=%zu", h->quoted, h->count - 1);
    } else {
        h->c.refused++;
        co_log(CO_LOG_WARN, "notify_refused", "url=%s why=%s (the notice is "
               "dropped: the receiver will not take it)", h->quoted, q);
    }
    h->down = false;
    h->told_full = false;
    *backoff = CO_HOOK_RETRY_MIN_MS;
    free(h->ring[h->head]);
    h->ring[h->head] = NULL;
    h->head = (h->head + 1) % h->max;
    h->count--;
}

static void *
s_thread(void *arg)
{
    co_hook_t *h = arg;
    CURL *curl = curl_easy_init();
    long backoff = CO_HOOK_RETRY_MIN_MS;
    pthread_mutex_lock(&h->lock);
    while (!h->stop) {
        if (h->count == 0) {
            pthread_cond_wait(&h->wake, &h->lock);
            continue;
        }
        const char *body = h->ring[h->head];   /* stays until popped */
        pthread_mutex_unlock(&h->lock);
        char why[CURL_ERROR_SIZE + 32] = "curl_easy_init failed";
        int rc = curl ? s_send(curl, &h->stop, h->url, body, why, sizeof why)
                     : 1;
        pthread_mutex_lock(&h->lock);
        h->c.attempts++;
        if (rc == 1 && h->stop)
            break;              /* cut short by the stop: still queued */
        s_after(h, rc, why, &backoff);
        if (rc == 1 && s_pause(h, backoff))
            break;
    }
    pthread_mutex_unlock(&h->lock);
    curl_easy_cleanup(curl);
    return NULL;
}

co_hook_t *
co_hook_new(const char *url, size_t queue_max, char *err, size_t errlen)
{
    char why[160];
    if (co_hook_check_url(url, why, sizeof why) != 0) {
        snprintf(err, errlen, "%.200s: %s", url, why);
        return NULL;
    }
    pthread_once(&s_curl_once, s_curl_global);
    if (s_curl_init != CURLE_OK) {
        snprintf(err, errlen, "curl_global_init: %s",
                 curl_easy_strerror(s_curl_init));
        return NULL;
    }
    co_hook_t *h = calloc(1, sizeof *h);
    if (!h || !(h->url = strdup(url)) ||
        !(h->ring = calloc(queue_max ? queue_max : 1, sizeof *h->ring))) {
        snprintf(err, errlen, "co_hook: out of memory");
        if (h)
            free(h->url);
        free(h);
        return NULL;
    }
    h->max = queue_max ? queue_max : 1;
    co_log_quote(h->quoted, sizeof h->quoted, url);
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    if (pthread_create(&h->thread, NULL, s_thread, h) != 0) {
        snprintf(err, errlen, "pthread_create(notify): %s", strerror(errno));
        co_hook_destroy(&h);
        return NULL;
    }
    h->started = true;
    return h;
}

bool
co_hook_post(co_hook_t *h, const char *body)
{
    if (!h || strlen(body) > CO_HOOK_BODY_MAX)
        return false;
    char *copy = strdup(body);
    pthread_mutex_lock(&h->lock);
    bool queued = copy && h->count < h->max;
    if (queued) {
        h->ring[(h->head + h->count) % h->max] = copy;
        h->count++;
        h->c.queued++;
        pthread_cond_signal(&h->wake);
    } else {
        h->c.dropped++;
        if (!h->told_full)
            co_log(CO_LOG_ERROR, "notify_dropped", "url=%s queue=%zu (its "
                   "bound, --notify-queue): the receiver has not taken the "
                   "queued notices; this and further ones are dropped until "
                   "it does", h->quoted, h->max);
        h->told_full = true;
        free(copy);
    }
    pthread_mutex_unlock(&h->lock);
    return queued;
}

void
co_hook_counters(co_hook_t *h, co_hook_counters_t *out)
{
    pthread_mutex_lock(&h->lock);
    *out = h->c;
    pthread_mutex_unlock(&h->lock);
}

void
co_hook_destroy(co_hook_t **hp)
{
    co_hook_t *h = hp ? *hp : NULL;
    if (!h)
        return;
    *hp = NULL;
    if (h->started) {
        pthread_mutex_lock(&h->lock);
        __atomic_store_n(&h->stop, true, __ATOMIC_RELAXED);
        pthread_cond_signal(&h->wake);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
    }
    if (h->count)
        co_log(CO_LOG_WARN, "notify_undelivered", "url=%s notices=%zu (the "
               "collector stops; they were not taken)", h->quoted, h->count);
    for (size_t i = 0; i < h->count; i++)
        free(h->ring[(h->head + i) % h->max]);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->wake);
    free(h->ring);
    free(h->url);
    free(h);
}
