/* simulate.c: the `carpenter simulate` subcommand - flags, then load the
 * snapshot, run the simulations, print the report (internal/simulate,
 * docs/simulate.md). Exit status: 0, 2 for bad flags or a bad snapshot,
 * 1 when the simulation itself fails. */
#include "simulate.h"

#include <stdio.h>
#include <string.h>

#include "carpenter/alloc.h"
#include "carpenter/buf.h"
#include "carpenter/error.h"
#include "carpenter/log.h"
#include "carpenter/simulate.h"
#include "carpenter/timeutil.h"

static void usage(FILE *out)
{
  fputs("Usage: carpenter simulate [flags] SNAPSHOT...\n"
        "\n"
        "Reads a snapshot of a cluster - what\n"
        "  kubectl get pods,nodes,nodepools,nodeclaims,proxmoxnodeclasses,\\\n"
        "    daemonsets,pdb -A -o yaml   (or -o json)\n"
        "prints, in one or more files (\"-\" is standard input) - and shows,\n"
        "without contacting any server, what Carpenter would do now: the\n"
        "NodeClaims provisioning would create for the pending pods and why\n"
        "the others cannot be placed, what consolidation would delete or\n"
        "replace and why each other NodeClaim stays, and the price per hour\n"
        "before and after. Instance types and prices come from each\n"
        "ProxmoxNodeClass; every zone it is known to use is taken as having\n"
        "room (host capacity is not in a snapshot).\n"
        "\n"
        "Flags:\n"
        "  -o, --output FORMAT  text (default) or json\n"
        "      --nodepool FILE  NodePools that replace the snapshot's of the\n"
        "                       same name, or are added (repeatable): what if\n"
        "                       the pool were changed?\n"
        "      --now TIME       the time to simulate at (RFC 3339; default:\n"
        "                       now): consolidateAfter, budget schedules\n"
        "  -v, --verbose        log what the controllers' code logs, and the\n"
        "                       time each phase took (stderr)\n"
        "  -h, --help           this text\n"
        "\n"
        "Exit status: 0; 2 for bad flags or a bad snapshot (the message names\n"
        "the file, document, item and object); 1 when the simulation fails.\n",
        out);
}

static int flag_value(int argc, char **argv, int *i, const char *longname,
                      const char *shortname, const char **value, FILE *err)
{
  const char *a = argv[*i];
  size_t n = strlen(longname);
  if (!strncmp(a, longname, n) && a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (strcmp(a, longname) && (!shortname || strcmp(a, shortname)))
    return 0;
  if (*i + 1 >= argc) {
    fprintf(err, "carpenter simulate: %s needs a value\n", longname);
    *value = NULL;
    return -1;
  }
  *value = argv[++*i];
  return 1;
}

int carp_simulate_main(int argc, char **argv, FILE *out, FILE *err)
{
  const char **files = carp_calloc((size_t)argc + 1, sizeof(char *));
  const char **pools = carp_calloc((size_t)argc + 1, sizeof(char *));
  size_t nfiles = 0, npools = 0;
  struct carp_simulation *sim = NULL;
  struct carp_buf report;
  const char *format = "text", *now_text = NULL, *v;
  int64_t now = carp_time_wall_ms();
  char *msg = NULL;
  int i, r, code = 2, verbose = 0, flags_done = 0;

  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (flags_done || a[0] != '-' || !strcmp(a, "-")) {
      files[nfiles++] = a;
      continue;
    }
    if (!strcmp(a, "--")) {
      flags_done = 1;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(out);
      code = 0;
      goto done;
    } else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
      verbose = 1;
    } else if ((r = flag_value(argc, argv, &i, "--output", "-o", &v, err))) {
      if (r < 0)
        goto done;
      format = v;
    } else if ((r = flag_value(argc, argv, &i, "--nodepool", NULL, &v, err))) {
      if (r < 0)
        goto done;
      pools[npools++] = v;
    } else if ((r = flag_value(argc, argv, &i, "--now", NULL, &v, err))) {
      if (r < 0)
        goto done;
      now_text = v;
    } else {
      fprintf(err,
              "carpenter simulate: unknown flag %s (see carpenter simulate "
              "--help)\n",
              a);
      goto done;
    }
  }
  if (strcmp(format, "text") && strcmp(format, "json")) {
    fprintf(err, "carpenter simulate: --output %s: want text or json\n",
            format);
    goto done;
  }
  if (now_text && carp_time_parse_rfc3339(now_text, &now)) {
    fprintf(err,
            "carpenter simulate: --now %s: not an RFC 3339 time "
            "(2026-01-02T15:04:05Z)\n",
            now_text);
    goto done;
  }
  if (!nfiles) {
    fprintf(err, "carpenter simulate: no snapshot given (see carpenter "
                 "simulate --help)\n");
    goto done;
  }
  carp_log_set_level(verbose ? CARP_LOG_INFO : CARP_LOG_ERROR);
  carp_log_set_format(CARP_LOG_FORMAT_TEXT);
  carp_log_set_output(err);
  if (carp_simulation_load(files, nfiles, pools, npools, &sim, &msg)) {
    fprintf(err, "carpenter simulate: %s\n", msg ? msg : "cannot load");
    goto done;
  }
  if ((r = carp_simulation_run(sim, now))) {
    fprintf(err, "carpenter simulate: the simulation failed: %s\n",
            carp_strerror(r));
    code = 1;
    goto done;
  }
  carp_buf_init(&report, CARP_BUF_UNLIMITED);
  if (!strcmp(format, "json"))
    carp_simulation_report_json(sim, &report);
  else
    carp_simulation_report_text(sim, &report);
  fwrite(report.ptr ? report.ptr : "", 1, report.len, out);
  carp_buf_free(&report);
  if (verbose) {
    uint64_t load, prov, cons;
    carp_simulation_timings(sim, &load, &prov, &cons);
    fprintf(err,
            "carpenter simulate: loading %.3f s, provisioning %.3f s, "
            "consolidation %.3f s\n",
            (double)load / 1000, (double)prov / 1000, (double)cons / 1000);
  }
  code = fflush(out) ? 1 : 0;
done:
  carp_simulation_free(sim);
  carp_free(msg);
  carp_free(files);
  carp_free(pools);
  carp_log_flush();
  return code;
}
