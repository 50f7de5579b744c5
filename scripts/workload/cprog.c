/* cprog.c: what small C programs (and the runtimes of other languages) do through libc, compiled by
 * gcc inside the container by gcc-check.sh and run there. Prints one JSON line per check:
 * {"name": ..., "result": "pass"|"fail", "detail": ...}. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static const char *prefix = "";
static int failures;

static void report(const char *name, int ok, const char *detail)
{
    printf("{\"name\": \"%s%s\", \"result\": \"%s\", \"detail\": \"", prefix, name, ok ? "pass" : "fail");
    for (const char *p = detail ? detail : ""; *p; p++)
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if ((unsigned char)*p >= 0x20) putchar(*p);
    printf("\"}\n");
    fflush(stdout);
    failures += !ok;
}
#define CHECK(name, cond) do { errno = 0; int ok_ = (cond); report(name, ok_, ok_ ? "" : strerror(errno)); } while (0)

static int fork_exec_wait(void)
{
    pid_t p = fork();
    if (p < 0) return 0;
    if (p == 0) { execl("/bin/sh", "sh", "-c", "exit 7", (char *)0); _exit(127); }
    int st;
    return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7;
}

static int spawn_wait(void)
{
    pid_t p;
    char *argv[] = {"true", NULL};
    if (posix_spawnp(&p, "true", NULL, NULL, argv, environ) != 0) return 0;
    int st;
    return waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long counter;
static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < 100000; i++) { pthread_mutex_lock(&mu); counter++; pthread_mutex_unlock(&mu); }
    pthread_mutex_lock(&mu); pthread_cond_broadcast(&cv); pthread_mutex_unlock(&mu);
    return NULL;
}
static int threads(void)
{
    pthread_t t[8];
    for (int i = 0; i < 8; i++) if (pthread_create(&t[i], NULL, worker, NULL)) return 0;
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    return counter == 800000;
}

static int mmaps(void)
{
    size_t n = 64 << 20;
    char *a = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) return 0;
    memset(a, 1, n);
    if (mprotect(a, 4096, PROT_READ)) return 0;
    munmap(a, n);
    char path[] = "/tmp/cprog-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 1 << 20)) return 0;
    char *f = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (f == MAP_FAILED) return 0;
    strcpy(f, "mapped");
    msync(f, 1 << 20, MS_SYNC);
    char buf[8] = {0};
    pread(fd, buf, 6, 0);
    munmap(f, 1 << 20);
    close(fd);
    unlink(path);
    return strcmp(buf, "mapped") == 0;
}

static int pipes_and_pairs(void)
{
    int p[2], s[2];
    char b[8] = {0};
    if (pipe2(p, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM, 0, s)) return 0;
    if (write(p[1], "pipe", 4) != 4 || read(p[0], b, 4) != 4 || strcmp(b, "pipe")) return 0;
    if (send(s[0], "pair", 4, 0) != 4 || recv(s[1], b, 4, 0) != 4 || strcmp(b, "pair")) return 0;
    close(p[0]); close(p[1]); close(s[0]); close(s[1]);
    return 1;
}

static int tcp_loopback(void)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 4) || getsockname(l, (void *)&a, &al)) return 0;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (void *)&a, sizeof a)) return 0;
    int s = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    char b[8] = {0};
    if (s < 0 || write(c, "tcp", 3) != 3 || read(s, b, 3) != 3) return 0;
    close(c); close(s); close(l);
    return strcmp(b, "tcp") == 0;
}

static int epoll_eventfd(void)
{
    int e = epoll_create1(EPOLL_CLOEXEC), f = eventfd(0, EFD_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = f}, out;
    if (e < 0 || f < 0 || epoll_ctl(e, EPOLL_CTL_ADD, f, &ev)) return 0;
    uint64_t one = 1;
    if (write(f, &one, 8) != 8) return 0;
    int n = epoll_wait(e, &out, 1, 1000);
    close(e); close(f);
    return n == 1 && out.data.fd == f;
}

static volatile sig_atomic_t got;
static void on_alarm(int s) { (void)s; got = 1; }
static int signals(void)
{
    struct sigaction sa = {.sa_handler = on_alarm};
    if (sigaction(SIGALRM, &sa, NULL)) return 0;
    struct itimerval it = {.it_value = {.tv_usec = 20000}};
    setitimer(ITIMER_REAL, &it, NULL);
    for (int i = 0; i < 200 && !got; i++) usleep(5000);
    return got;
}

static int shm_posix(void)
{
    int fd = shm_open("/cprog-shm", O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, 4096)) return 0;
    shm_unlink("/cprog-shm");
    close(fd);
    return 1;
}

static int misc(void)
{
    struct timespec ts;
    char r[16];
    cpu_set_t set;
    struct rlimit rl;
    return clock_gettime(CLOCK_MONOTONIC, &ts) == 0 && getrandom(r, sizeof r, 0) == sizeof r &&
           sched_getaffinity(0, sizeof set, &set) == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
           prlimit(0, RLIMIT_NOFILE, NULL, &rl) == 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) prefix = argv[1];
    CHECK("fork + exec + waitpid", fork_exec_wait());
    CHECK("posix_spawnp", spawn_wait());
    CHECK("8 pthreads, mutex, condvar", threads());
    CHECK("mmap anonymous 64 MiB + file-backed MAP_SHARED, mprotect, msync", mmaps());
    CHECK("pipe2, socketpair", pipes_and_pairs());
    CHECK("TCP over 127.0.0.1", tcp_loopback());
    CHECK("epoll + eventfd", epoll_eventfd());
    CHECK("sigaction + setitimer", signals());
    CHECK("shm_open in /dev/shm", shm_posix());
    CHECK("clock_gettime, getrandom, sched_getaffinity, prlimit", misc());
    return failures != 0;
}
