/* The pod sandbox's process, as Kubernetes' pause: holds the pod's namespaces, reaps
 * zombies, exits on SIGINT/SIGTERM. Built static, so the image needs nothing else. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int signal) { (void)signal; _exit(0); }

static void reap(int signal) {
  (void)signal;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (sigaction(SIGINT, &on_stop, NULL) < 0 || sigaction(SIGTERM, &on_stop, NULL) < 0 || sigaction(SIGCHLD, &on_child, NULL) < 0) return 1;
  for (;;) pause();
}
