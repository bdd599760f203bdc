/* The running controller: every module wired together on one loop. Only
 * app.c knows how the pieces connect; main.c parses flags and runs it. */
#ifndef CARP_APP_H
#define CARP_APP_H

#include "options.h"

/* Runs until SIGTERM/SIGINT or a fatal condition; returns the exit code:
 * 0 after a clean shutdown, 2 for a bad configuration, 1 otherwise. */
int carp_app_run(const struct carp_options *opts);

#endif
