/*
 * Test helper for the systemd unit's sandbox (test/helpers/systemd-sandbox.ts).
 *
 *   sandbox-exec <filter.bpf> <program> [args...]
 *     sets no_new_privs, installs the seccomp filter read from <filter.bpf> (classic BPF,
 *     struct sock_filter[] as the harness built it from the unit), then execs <program>.
 *
 *   sandbox-exec --notify-listen <abstract-name>
 *     a service manager's NOTIFY_SOCKET (@<abstract-name>): prints every datagram as one line
 *     ("pid=<sender> <message with newlines as spaces>") and closes the file descriptors a
 *     message carries (sd_notify's BARRIER=1 waits for that), until killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int notify_listen (const char *name) {
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) { perror("socket"); return 1; }
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  size_t len = strlen(name);
  if (len + 1 > sizeof(sa.sun_path)) { fprintf(stderr, "name too long\n"); return 1; }
  memcpy(sa.sun_path + 1, name, len); /* abstract: leading NUL */
  if (bind(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + 1 + len) < 0) { perror("bind"); return 1; }
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on));
  printf("listening\n");
  fflush(stdout);
  for (;;) {
    char buf[4097];
    char control[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 16)];
    struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof(control) };
    ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) { if (errno == EINTR) continue; perror("recvmsg"); return 1; }
    buf[n] = 0;
    int pid = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) pid = ((struct ucred *)CMSG_DATA(c))->pid;
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int *fds = (int *)CMSG_DATA(c);
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) close(fds[i]);
      }
    }
    for (ssize_t i = 0; i < n; i++) if (buf[i] == '\n') buf[i] = ' ';
    printf("pid=%d %s\n", pid, buf);
    fflush(stdout);
  }
}

int main (int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--notify-listen") == 0) return notify_listen(argv[2]);
  if (argc < 3) { fprintf(stderr, "usage: sandbox-exec <filter.bpf> <program> [args...] | --notify-listen <name>\n"); return 2; }
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) { perror(argv[1]); return 127; }
  struct stat st;
  if (fstat(fd, &st) < 0 || st.st_size == 0 || st.st_size % sizeof(struct sock_filter) != 0) { fprintf(stderr, "bad filter file\n"); return 127; }
  struct sock_filter *prog = malloc(st.st_size);
  if (prog == NULL || read(fd, prog, st.st_size) != st.st_size) { perror("read"); return 127; }
  close(fd);
  struct sock_fprog fprog = { .len = (unsigned short)(st.st_size / sizeof(struct sock_filter)), .filter = prog };
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) { perror("no_new_privs"); return 127; }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) < 0) { perror("seccomp"); return 127; }
  execv(argv[2], argv + 2);
  perror(argv[2]);
  return 127;
}
