/* bench_load_srv.c: the server `cordon bench load` measures: a child `cordon serve` (the binary
 * beside cordon-bench) on a temporary data directory, or a running one; and its setup over
 * HTTP: the index, the permission model, one API key per subject, and the cleanup.
 * Relies on bench_http, jansson and Linux's /proc (the binary's path, the child's CPU time). */
#include "bench_load_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void set_admin(load_server_t *s, const char *id_secret)
{
    char b64[200];
    bench_http_b64((const unsigned char *)id_secret, strlen(id_secret), b64);
    snprintf(s->admin, sizeof s->admin, "ApiKey %s", b64);
}

int load_server_remote(load_server_t *s, const char *url, const char *key)
{
    memset(s, 0, sizeof *s);
    s->out_fd = -1;
    if (bench_http_parse_url(url, s->host, sizeof s->host, s->port, sizeof s->port)) {
        fprintf(stderr, "cordon bench load: --url takes http://HOST:PORT (got '%s')\n", url);
        return -1;
    }
    if (!key || !strchr(key, ':') || strlen(key) > 140) {
        fprintf(stderr, "cordon bench load: --url needs --key ID:SECRET, an admin key\n");
        return -1;
    }
    set_admin(s, key);
    return 0;
}

/* The environment of the child: ours without the variables we set, then ours. */
static char **child_env(const char *bootstrap)
{
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 3, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "CORDON_BOOTSTRAP_KEY=", 21) &&
            strncmp(environ[i], "CORDON_ACCESS_LOG=", 18) &&
            strncmp(environ[i], "CORDON_LISTEN=", 14))
            env[k++] = environ[i];
    env[k++] = (char *)bootstrap;
    env[k++] = "CORDON_ACCESS_LOG=off";
    return env;
}

/* Reads the child's stdout until its "(port N)" line; the port, or 0. */
static unsigned read_port(int fd)
{
    char buf[4096];
    size_t len = 0;
    for (int waited = 0; waited < 120000 && len < sizeof buf - 1;) {
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, 100);
        if (rc == 0) {
            waited += 100;
            continue;
        }
        ssize_t r = rc > 0 ? read(fd, buf + len, sizeof buf - 1 - len) : -1;
        if (r <= 0)
            return 0;
        len += (size_t)r;
        buf[len] = '\0';
        const char *p2 = strstr(buf, "(port ");
        if (p2 && strchr(p2, ')'))
            return (unsigned)strtoul(p2 + 6, NULL, 10);
    }
    return 0;
}

int load_server_start(load_server_t *s, const char *dir)
{
    char self[PATH_MAX], bin[PATH_MAX + 16], data[sizeof s->base + 8], log[sizeof s->base + 16];
    char secret[33], bootstrap[128], id_secret[96];
    unsigned char raw[16];
    int out[2];
    memset(s, 0, sizeof *s);
    s->out_fd = -1;
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return fprintf(stderr, "cordon bench load: cannot read /proc/self/exe\n"), -1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(bin, sizeof bin, "%s/cordon", self);
    if (access(bin, X_OK))
        return fprintf(stderr, "cordon bench load: %s is missing (make builds it)\n", bin), -1;
    snprintf(s->base, sizeof s->base, "%s/cordon-bench-load.XXXXXX", dir);
    if (!mkdtemp(s->base))
        return fprintf(stderr, "cordon bench load: cannot create a directory under %s: %s\n", dir,
                       strerror(errno)),
               s->base[0] = '\0', -1;
    snprintf(data, sizeof data, "%s/data", s->base);
    snprintf(log, sizeof log, "%s/serve.log", s->base);
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return fprintf(stderr, "cordon bench load: getrandom failed\n"), -1;
    for (int i = 0; i < 16; i++)
        snprintf(secret + 2 * i, 3, "%02x", raw[i]);
    snprintf(id_secret, sizeof id_secret, "bench:%s", secret);
    snprintf(bootstrap, sizeof bootstrap, "CORDON_BOOTSTRAP_KEY=%s", id_secret);
    set_admin(s, id_secret);
    char **env = child_env(bootstrap);
    int logfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (!env || logfd < 0 || pipe2(out, O_CLOEXEC)) {
        free(env);
        return fprintf(stderr, "cordon bench load: cannot prepare the server's output\n"), -1;
    }
    char *argv[] = {bin, "serve", "--data", data, "--listen", "127.0.0.1:0", NULL};
    fflush(NULL);
    s->pid = fork();
    if (s->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* the server goes when the benchmark does */
        dup2(out[1], 1);
        dup2(logfd, 2);
        execve(bin, argv, env);
        _exit(127);
    }
    free(env);
    close(out[1]);
    close(logfd);
    s->out_fd = out[0];
    if (s->pid < 0) {
        s->pid = 0;
        return fprintf(stderr, "cordon bench load: fork: %s\n", strerror(errno)), -1;
    }
    unsigned port = read_port(s->out_fd);
    if (!port) {
        fprintf(stderr, "cordon bench load: cordon serve did not start; its log: %s\n", log);
        return -1;
    }
    snprintf(s->host, sizeof s->host, "127.0.0.1");
    snprintf(s->port, sizeof s->port, "%u", port);
    return 0;
}

void load_server_stop(load_server_t *s, int keep)
{
    int status = 0;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (int i = 0; i < 6000 && waitpid(s->pid, &status, WNOHANG) == 0; i++)
            usleep(10000);
        if (waitpid(s->pid, &status, WNOHANG) == 0) {
            fprintf(stderr, "cordon bench load: the server did not stop in 60 s; killing it\n");
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
        }
        s->pid = 0;
    }
    if (s->out_fd >= 0)
        close(s->out_fd);
    s->out_fd = -1;
    if (s->base[0] && !keep) {
        char cmd[sizeof s->base + 16];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->base);
        if (system(cmd) != 0)
            fprintf(stderr, "cordon bench load: could not remove %s\n", s->base);
    } else if (s->base[0]) {
        fprintf(stderr, "cordon bench load: kept %s (data/ and serve.log)\n", s->base);
    }
    s->base[0] = '\0';
}

/* A server this run did not start: its own count, from GET /metrics (admin key). */
static double remote_cpu_s(const load_server_t *s)
{
    static const char name[] = "\ncordon_process_cpu_seconds_total ";
    bench_http_t c;
    bench_http_resp_t r;
    double cpu = -1;
    if (!s->host[0] || !s->admin[0])
        return -1;
    bench_http_init(&c, s->host, s->port);
    if (!bench_http_request(&c, "GET", "/metrics", s->admin, NULL, 0, &r) && r.status == 200) {
        const char *at = strstr(r.body, name);
        if (at)
            cpu = strtod(at + sizeof name - 1, NULL);
    }
    bench_http_free(&c);
    return cpu;
}

double load_server_cpu_s(const load_server_t *s)
{
    char path[64], buf[1024];
    unsigned long long ut = 0, st = 0;
    if (s->pid <= 0)
        return remote_cpu_s(s);
    snprintf(path, sizeof path, "/proc/%d/stat", (int)s->pid);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

json_t *load_admin(load_server_t *s, bench_http_t *c, const char *method, const char *path,
                   const char *body)
{
    bench_http_resp_t r;
    if (bench_http_request(c, method, path, s->admin, body, body ? strlen(body) : 0, &r)) {
        fprintf(stderr, "cordon bench load: %s %s: %s\n", method, path, c->err);
        return NULL;
    }
    json_t *j = json_loadb(r.body, r.body_len, 0, NULL);
    if (r.status < 200 || r.status > 299 || !j) {
        fprintf(stderr, "cordon bench load: %s %s: status %d: %.400s\n", method, path, r.status,
                r.body);
        json_decref(j);
        return NULL;
    }
    return j;
}

long load_index_count(load_run_t *r, bench_http_t *c, const char *name)
{
    char path[CORDON_NAME_MAX + 16];
    bench_http_resp_t resp;
    snprintf(path, sizeof path, "/%s/_count", name);
    /* the admin key acts for no subject: count as one of the subjects that read everything */
    if (bench_http_request(c, "GET", path, r->auth[1][0], NULL, 0, &resp)) {
        fprintf(stderr, "cordon bench load: GET %s: %s\n", path, c->err);
        return -2;
    }
    if (resp.status == 404)
        return -1;
    json_t *j = json_loadb(resp.body, resp.body_len, 0, NULL);
    json_t *n = json_object_get(j, "count");
    long count = resp.status == 200 && json_is_integer(n) ? (long)json_integer_value(n) : -2;
    json_decref(j);
    if (count == -2)
        fprintf(stderr, "cordon bench load: GET %s: status %d: %.400s\n", path, resp.status,
                resp.body);
    return count;
}

int load_index_create(load_run_t *r, bench_http_t *c, const char *name)
{
    char path[CORDON_NAME_MAX + 2], body[512];
    snprintf(path, sizeof path, "/%s", name);
    snprintf(body, sizeof body,
             "{\"mappings\":{\"properties\":{\"title\":{\"type\":\"text\"},\"text\":{\"type\":"
             "\"text\"},\"allowed_groups\":{\"type\":\"keyword\"},\"vector\":{\"type\":"
             "\"dense_vector\",\"dims\":%u,\"similarity\":\"cosine\",\"index_options\":{"
             "\"type\":\"int8_hnsw\"}}}}}",
             r->o.dim);
    json_t *j = load_admin(&r->srv, c, "PUT", path, body);
    if (!j)
        return -1;
    json_decref(j);
    if (r->n_made < sizeof r->made / sizeof *r->made)
        snprintf(r->made[r->n_made++], sizeof r->made[0], "%s", name);
    return 0;
}

int load_setup_subjects(load_run_t *r, bench_http_t *c)
{
    static char ops[LOAD_MODEL_OPS][LOAD_OP_MAX];
    cdn_buf_t b;
    int rc = 0;
    load_model_ops(ops);
    cdn_buf_init(&b, 1 << 20);
    cdn_buf_puts(&b, "{\"ops\":[");
    for (size_t i = 0; i < LOAD_MODEL_OPS; i++)
        cdn_buf_printf(&b, "%s%s", i ? "," : "", ops[i]);
    if (cdn_buf_puts(&b, "]}") != 0)
        rc = -1;
    json_t *j = rc ? NULL : load_admin(&r->srv, c, "POST", "/_cordon/model", b.data);
    cdn_buf_free(&b);
    if (!j)
        return -1;
    json_decref(j);
    for (int full = 0; full < 2; full++)
        for (int s = 0; s < LOAD_SUBJECTS; s++) {
            char sub[32], body[160];
            load_subject_name(s, full, sub, sizeof sub);
            snprintf(body, sizeof body, "{\"name\":\"bench-%s\",\"cordon\":{\"subject\":\"%s\"}}",
                     sub, sub);
            j = load_admin(&r->srv, c, "POST", "/_security/api_key", body);
            const char *enc = json_string_value(json_object_get(j, "encoded"));
            const char *id = json_string_value(json_object_get(j, "id"));
            if (!enc || !id || strlen(enc) > 180) {
                json_decref(j);
                return -1;
            }
            snprintf(r->auth[full][s], sizeof r->auth[full][s], "ApiKey %s", enc);
            snprintf(r->key_id[full][s], sizeof r->key_id[full][s], "%s", id);
            json_decref(j);
        }
    return 0;
}

void load_cleanup(load_run_t *r, bench_http_t *c)
{
    cdn_buf_t b;
    if (r->o.keep)
        return;
    for (size_t i = 0; i < r->n_made; i++) {
        char path[CORDON_NAME_MAX + 2];
        snprintf(path, sizeof path, "/%s", r->made[i]);
        json_decref(load_admin(&r->srv, c, "DELETE", path, NULL));
    }
    cdn_buf_init(&b, 1 << 20);
    cdn_buf_puts(&b, "{\"ids\":[");
    for (int full = 0, k = 0; full < 2; full++)
        for (int s = 0; s < LOAD_SUBJECTS; s++)
            if (r->key_id[full][s][0])
                cdn_buf_printf(&b, "%s\"%s\"", k++ ? "," : "", r->key_id[full][s]);
    if (cdn_buf_puts(&b, "]}") == 0 && r->key_id[0][0][0])
        json_decref(load_admin(&r->srv, c, "DELETE", "/_security/api_key", b.data));
    cdn_buf_free(&b);
}
