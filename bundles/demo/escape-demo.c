/*
 * escape-demo.c - container escape smoke test for the rloxsc demo bundle.
 *
 * This program is meant to run INSIDE a container (it is PID 1 of the demo
 * bundle built by scripts/build-bundle.sh).  It tries, one after the other,
 * a handful of classic ways to get out of (or hurt the host from) a badly
 * configured container, and prints one line per attempt:
 *
 *     [contained] <attempt>: <what happened>
 *     [ESCAPED]   <attempt>: <what happened>
 *
 * followed by "summary: N contained, M escaped".  The exit status is 0 when
 * every attempt was contained and 1 otherwise.
 *
 * Attempts, in order:
 *   host-network    list interfaces (anything but lo = host network) and TCP
 *                   connect to 127.0.0.1:$RLOXSC_DEMO_PORT (default 47123),
 *                   where the host runs a listener during the demo.
 *   write-root      create /rloxsc-demo-probe in the root filesystem.
 *   mount           mount a tmpfs on /tmp and proc on /mnt.
 *   user-namespace  unshare(CLONE_NEWUSER) (done in a child, so the rest of
 *                   the program is unaffected when it succeeds).
 *   fork-bomb       fork pause()ing children until fork fails (capped at
 *                   20000 children), then kill and reap them all.
 *   memory          a child allocates and touches 16 MiB chunks (capped at
 *                   8192 MiB) until it is OOM-killed or malloc fails.
 *
 * DO NOT run this on a host: the fork-bomb and memory attempts are only
 * harmless when a pids / memory cgroup limit is in place.
 *
 * Robustness: every attempt is bounded by an alarm() timeout, all children
 * die with the parent (PR_SET_PDEATHSIG) and stdout is line buffered so that
 * the output survives an OOM kill.  An outcome that does not demonstrate a
 * limit (e.g. a timeout) is conservatively reported as ESCAPED.
 *
 * Build: gcc -static -O2 -Wall -Wextra -o escape-demo escape-demo.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_PORT        47123
#define CONNECT_TIMEOUT_MS  2000
#define ATTEMPT_TIMEOUT_S   20
#define FORK_CAP            20000
#define MEM_CHUNK_MIB       16
#define MEM_CAP_MIB         8192

static int n_contained;
static int n_escaped;

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
}

/* Arm the per-attempt timeout (0 disarms it). */
static void arm_timeout(unsigned int seconds)
{
    timed_out = 0;
    alarm(seconds);
}

/* "EPERM (Operation not permitted)" */
static const char *errdesc(int e)
{
    static char buf[128];
    const char *name = NULL;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    name = strerrorname_np(e);
#endif
    if (name != NULL)
        snprintf(buf, sizeof buf, "%s (%s)", name, strerror(e));
    else
        snprintf(buf, sizeof buf, "errno %d (%s)", e, strerror(e));
    return buf;
}

static void report(int escaped, const char *attempt, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    if (escaped) {
        n_escaped++;
        printf("[ESCAPED]   %s: %s\n", attempt, msg);
    } else {
        n_contained++;
        printf("[contained] %s: %s\n", attempt, msg);
    }
}

/* Bounded string append; silently truncates. */
static void append(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strnlen(buf, size);
    va_list ap;

    if (len + 1 >= size)
        return;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* waitpid() that retries on EINTR. */
static pid_t reap(pid_t pid, int *status)
{
    pid_t r;

    do {
        r = waitpid(pid, status, 0);
    } while (r < 0 && errno == EINTR);
    return r;
}

/* ------------------------------------------------------------------ */
/* host-network                                                        */
/* ------------------------------------------------------------------ */

/*
 * Devices the kernel creates in EVERY new network namespace when the
 * corresponding tunnel module is loaded (fallback tunnels).  Seeing them does
 * not mean we share the host's network, so they are ignored.
 */
static int is_fallback_netdev(const char *name)
{
    static const char *const fallback[] = {
        "sit0", "tunl0", "ip6tnl0", "ip_vti0", "ip6_vti0", "gre0",
        "gretap0", "erspan0", "ip6gre0", "ip6erspan0", NULL,
    };
    for (size_t i = 0; fallback[i] != NULL; i++)
        if (strcmp(name, fallback[i]) == 0)
            return 1;
    return 0;
}

/* Is name already an entry of the comma separated list? */
static int in_list(const char *list, const char *name)
{
    size_t nlen = strlen(name);
    const char *p = list;

    while (*p != '\0') {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        if (len == nlen && strncmp(p, name, nlen) == 0)
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

static void note_iface(const char *name, char *list, size_t size, int *foreign)
{
    /* getifaddrs() reports one entry per address family: dedupe. */
    if (in_list(list, name))
        return;
    append(list, size, "%s%s", list[0] != '\0' ? "," : "", name);
    if (strcmp(name, "lo") != 0 && !is_fallback_netdev(name))
        *foreign = 1;
}

/* Returns 0 on success, -1 (errno set) when no interface list is available. */
static int list_interfaces(char *list, size_t size, int *foreign)
{
    FILE *f;
    char line[512];
    int lineno = 0;

    list[0] = '\0';
    *foreign = 0;

    f = fopen("/proc/net/dev", "re");
    if (f != NULL) {
        while (fgets(line, sizeof line, f) != NULL) {
            char *p = line, *colon;

            if (++lineno <= 2)      /* two header lines */
                continue;
            while (*p == ' ' || *p == '\t')
                p++;
            colon = strchr(p, ':');
            if (colon == NULL)
                continue;
            *colon = '\0';
            if (*p != '\0' && strlen(p) < IFNAMSIZ)
                note_iface(p, list, size, foreign);
        }
        fclose(f);
        return 0;
    }

    /* /proc not available: ask the kernel over netlink instead. */
    {
        struct ifaddrs *ifa, *it;

        if (getifaddrs(&ifa) != 0)
            return -1;
        for (it = ifa; it != NULL; it = it->ifa_next)
            if (it->ifa_name != NULL && strlen(it->ifa_name) < IFNAMSIZ)
                note_iface(it->ifa_name, list, size, foreign);
        freeifaddrs(ifa);
    }
    return 0;
}

static int demo_port(void)
{
    const char *s = getenv("RLOXSC_DEMO_PORT");
    char *end;
    long v;

    if (s == NULL || *s == '\0')
        return DEFAULT_PORT;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1 || v > 65535)
        return DEFAULT_PORT;
    return (int)v;
}

/*
 * Try a TCP connection to 127.0.0.1:port with a timeout.
 * Returns 1 if connected, 0 if not; *err receives the errno (0 on success,
 * ETIMEDOUT on timeout).
 */
static int try_connect(int port, int *err)
{
    struct sockaddr_in sa;
    struct pollfd pfd;
    int fd, rc, soerr = 0;
    socklen_t len = sizeof soerr;

    *err = 0;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno;
        return 0;
    }
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    if (rc == 0) {
        close(fd);
        return 1;
    }
    if (errno != EINPROGRESS) {
        *err = errno;
        close(fd);
        return 0;
    }

    pfd.fd = fd;
    pfd.events = POLLOUT;
    pfd.revents = 0;
    do {
        rc = poll(&pfd, 1, CONNECT_TIMEOUT_MS);
    } while (rc < 0 && errno == EINTR && !timed_out);
    if (rc < 0) {
        *err = timed_out ? ETIMEDOUT : errno;
        close(fd);
        return 0;
    }
    if (rc == 0) {
        *err = ETIMEDOUT;
        close(fd);
        return 0;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
        *err = errno;
        close(fd);
        return 0;
    }
    close(fd);
    if (soerr != 0) {
        *err = soerr;
        return 0;
    }
    return 1;
}

static void attempt_host_network(void)
{
    char ifaces[1024];
    char msg[1400];
    int foreign = 0, err = 0, connected;
    int port = demo_port();

    msg[0] = '\0';
    if (list_interfaces(ifaces, sizeof ifaces, &foreign) == 0)
        append(msg, sizeof msg, "interfaces [%s]%s",
               ifaces[0] ? ifaces : "none",
               foreign ? " (host interfaces visible)" : "");
    else
        append(msg, sizeof msg, "interfaces unavailable: %s", errdesc(errno));

    connected = try_connect(port, &err);
    if (connected)
        append(msg, sizeof msg,
               "; connect 127.0.0.1:%d succeeded (host listener reachable)",
               port);
    else
        append(msg, sizeof msg, "; connect 127.0.0.1:%d failed: %s",
               port, errdesc(err));

    report(foreign || connected, "host-network", "%s", msg);
}

/* ------------------------------------------------------------------ */
/* write-root                                                          */
/* ------------------------------------------------------------------ */

static void attempt_write_root(void)
{
    static const char probe[] = "/rloxsc-demo-probe";
    int fd = open(probe, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);

    if (fd >= 0) {
        int uerr = 0;

        close(fd);
        if (unlink(probe) != 0)
            uerr = errno;
        if (uerr)
            report(1, "write-root", "created %s (could not remove it: %s)",
                   probe, errdesc(uerr));
        else
            report(1, "write-root", "created %s in the root filesystem "
                   "(removed again)", probe);
        return;
    }
    report(0, "write-root", "open(%s, O_CREAT) failed: %s", probe,
           errdesc(errno));
}

/* ------------------------------------------------------------------ */
/* mount                                                               */
/* ------------------------------------------------------------------ */

static void attempt_mount(void)
{
    char msg[600];
    int escaped = 0;
    struct stat st;

    msg[0] = '\0';
    if (mount("none", "/tmp", "tmpfs", 0, NULL) == 0) {
        escaped = 1;
        if (umount2("/tmp", MNT_DETACH) == 0)
            append(msg, sizeof msg, "tmpfs on /tmp mounted (unmounted again)");
        else
            append(msg, sizeof msg, "tmpfs on /tmp mounted (umount failed: %s)",
                   errdesc(errno));
    } else {
        append(msg, sizeof msg, "tmpfs on /tmp: %s", errdesc(errno));
    }

    if (stat("/mnt", &st) == 0 && S_ISDIR(st.st_mode)) {
        if (mount("proc", "/mnt", "proc", 0, NULL) == 0) {
            escaped = 1;
            if (umount2("/mnt", MNT_DETACH) == 0)
                append(msg, sizeof msg,
                       "; proc on /mnt mounted (unmounted again)");
            else
                append(msg, sizeof msg, "; proc on /mnt mounted "
                       "(umount failed: %s)", errdesc(errno));
        } else {
            append(msg, sizeof msg, "; proc on /mnt: %s", errdesc(errno));
        }
    } else {
        append(msg, sizeof msg, "; /mnt absent, proc mount skipped");
    }

    report(escaped, "mount", "%s", msg);
}

/* ------------------------------------------------------------------ */
/* user-namespace                                                      */
/* ------------------------------------------------------------------ */

static void attempt_user_namespace(void)
{
    int pipefd[2];
    int child_err = 0, status = 0;
    ssize_t n;
    pid_t pid;

    /*
     * Run unshare() in a child so that, if it succeeds, the rest of the
     * demo still runs with the container's original credentials.
     */
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        report(1, "user-namespace", "cannot test, pipe failed: %s",
               errdesc(errno));
        return;
    }
    pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        report(1, "user-namespace", "cannot test, fork failed: %s",
               errdesc(e));
        return;
    }
    if (pid == 0) {
        int e = 0;

        close(pipefd[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (unshare(CLONE_NEWUSER) != 0)
            e = errno;
        if (write(pipefd[1], &e, sizeof e) != (ssize_t)sizeof e)
            _exit(2);
        _exit(e == 0 ? 0 : 1);
    }

    close(pipefd[1]);
    arm_timeout(ATTEMPT_TIMEOUT_S);
    do {
        n = read(pipefd[0], &child_err, sizeof child_err);
    } while (n < 0 && errno == EINTR && !timed_out);
    arm_timeout(0);
    close(pipefd[0]);
    if (n != (ssize_t)sizeof child_err)
        kill(pid, SIGKILL);
    reap(pid, &status);

    if (n != (ssize_t)sizeof child_err)
        report(1, "user-namespace", "no answer from the test child "
               "(status 0x%x)", (unsigned)status);
    else if (child_err == 0)
        report(1, "user-namespace", "unshare(CLONE_NEWUSER) succeeded");
    else
        report(0, "user-namespace", "unshare(CLONE_NEWUSER) failed: %s",
               errdesc(child_err));
}

/* ------------------------------------------------------------------ */
/* fork-bomb                                                           */
/* ------------------------------------------------------------------ */

static pid_t bomb_children[FORK_CAP];

static void attempt_fork_bomb(void)
{
    int count = 0, fork_err = 0;

    arm_timeout(ATTEMPT_TIMEOUT_S);
    while (count < FORK_CAP && !timed_out) {
        pid_t pid = fork();

        if (pid < 0) {
            if (errno == EINTR)
                continue;
            fork_err = errno;
            break;
        }
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;)
                pause();
        }
        bomb_children[count++] = pid;
    }
    arm_timeout(0);

    for (int i = 0; i < count; i++)
        kill(bomb_children[i], SIGKILL);
    for (int i = 0; i < count; i++)
        reap(bomb_children[i], NULL);

    if (fork_err != 0)
        report(0, "fork-bomb", "fork failed after %d children: %s "
               "(all killed and reaped)", count, errdesc(fork_err));
    else if (count >= FORK_CAP)
        report(1, "fork-bomb", "created %d children without hitting a limit "
               "(cap reached; all killed and reaped)", count);
    else
        report(1, "fork-bomb", "timed out after %d children, no limit hit "
               "(all killed and reaped)", count);
}

/* ------------------------------------------------------------------ */
/* memory                                                              */
/* ------------------------------------------------------------------ */

/* Keeps the chunks reachable so the allocations cannot be optimised away. */
static void *volatile mem_chunks[MEM_CAP_MIB / MEM_CHUNK_MIB];

static void memory_child(int wfd)
{
    const size_t chunk = (size_t)MEM_CHUNK_MIB * 1024 * 1024;
    uint32_t total = 0;
    int fd;

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Make sure the OOM killer picks us and not the demo itself. */
    fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (write(fd, "1000", 4) != 4) {
            /* best effort only */
        }
        close(fd);
    }

    for (size_t i = 0; total < MEM_CAP_MIB; i++) {
        void *p = malloc(chunk);

        if (p == NULL)
            _exit(3);
        memset(p, 0xa5, chunk);
        mem_chunks[i] = p;
        total += MEM_CHUNK_MIB;
        if (write(wfd, &total, sizeof total) != (ssize_t)sizeof total)
            _exit(4);
    }
    _exit(0);
}

static void attempt_memory(void)
{
    int pipefd[2];
    uint32_t last = 0, val;
    int status = 0, interrupted = 0;
    ssize_t n;
    pid_t pid;

    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        report(1, "memory", "cannot test, pipe failed: %s", errdesc(errno));
        return;
    }
    pid = fork();
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        report(1, "memory", "cannot test, fork failed: %s", errdesc(e));
        return;
    }
    if (pid == 0) {
        close(pipefd[0]);
        memory_child(pipefd[1]);
    }
    close(pipefd[1]);

    arm_timeout(ATTEMPT_TIMEOUT_S);
    for (;;) {
        n = read(pipefd[0], &val, sizeof val);
        if (n == (ssize_t)sizeof val) {
            last = val;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            if (timed_out) {
                interrupted = 1;
                break;
            }
            continue;
        }
        break;                  /* EOF (child gone) or error */
    }
    arm_timeout(0);
    close(pipefd[0]);
    if (interrupted)
        kill(pid, SIGKILL);
    if (reap(pid, &status) < 0) {
        report(1, "memory", "waitpid failed: %s (last %u MiB)",
               errdesc(errno), (unsigned)last);
        return;
    }

    if (interrupted)
        report(1, "memory", "timed out after %d s at %u MiB, no limit hit",
               ATTEMPT_TIMEOUT_S, (unsigned)last);
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        report(0, "memory", "child killed by SIGKILL (OOM killer) after "
               "%u MiB", (unsigned)last);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        report(0, "memory", "malloc failed after %u MiB", (unsigned)last);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        report(1, "memory", "allocated and touched %u MiB without hitting "
               "a limit (cap reached)", (unsigned)last);
    else if (WIFSIGNALED(status))
        report(1, "memory", "child died from signal %d (%s) after %u MiB, "
               "no limit demonstrated", WTERMSIG(status),
               strsignal(WTERMSIG(status)), (unsigned)last);
    else
        report(1, "memory", "child exited with status %d after %u MiB, "
               "no limit demonstrated", WEXITSTATUS(status), (unsigned)last);
}

int main(void)
{
    struct sigaction sa;

    setvbuf(stdout, NULL, _IOLBF, 0);

    /* No SA_RESTART: blocking calls return EINTR when the alarm fires. */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0) {
        fprintf(stderr, "escape-demo: sigaction: %s\n", errdesc(errno));
        return 2;
    }
    /* Children must be reaped by us, not auto-reaped. */
    signal(SIGCHLD, SIG_DFL);

    arm_timeout(ATTEMPT_TIMEOUT_S);
    attempt_host_network();
    arm_timeout(ATTEMPT_TIMEOUT_S);
    attempt_write_root();
    arm_timeout(ATTEMPT_TIMEOUT_S);
    attempt_mount();
    arm_timeout(0);
    attempt_user_namespace();
    attempt_fork_bomb();
    attempt_memory();
    arm_timeout(0);

    printf("summary: %d contained, %d escaped\n", n_contained, n_escaped);
    fflush(stdout);
    return n_escaped == 0 ? 0 : 1;
}
