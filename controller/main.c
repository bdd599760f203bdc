/* main.c: the carpenter binary. Parses flags and environment into
 * options, sets up logging, and runs the controller (app.c); `carpenter
 * simulate ...` runs the simulation subcommand instead (simulate.c).
 *
 * Exit status: 0 after a clean shutdown, 2 for invalid flags or
 * configuration, 1 for anything else. */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "carpenter/log.h"
#include "carpenter/version.h"
#include "options.h"
#include "simulate.h"

int main(int argc, char **argv)
{
  struct carp_options opts;
  int code;

  if (argc > 1 && !strcmp(argv[1], "simulate"))
    return carp_simulate_main(argc - 1, argv + 1, stdout, stderr);
  switch (carp_options_parse(&opts, argc, argv, stdout, stderr)) {
  case CARP_OPTIONS_EXIT_OK:
    carp_options_free(&opts);
    return 0;
  case CARP_OPTIONS_ERROR:
    carp_options_free(&opts);
    return 2;
  case CARP_OPTIONS_RUN:
    break;
  }
  carp_log_set_level(opts.log_level);
  carp_log_set_format(opts.log_format);
  CARP_LOG_INFO("main", "starting carpenter",
                CARP_F_STR("version", CARP_VERSION),
                CARP_F_STR("commit", CARP_COMMIT));
  code = carp_app_run(&opts);
  CARP_LOG_INFO("main", "stopped", CARP_F_INT("exitCode", code));
  carp_log_flush();
  carp_options_free(&opts);
  return code;
}
