/* The `carpenter simulate` subcommand (simulate.c). */
#ifndef CARP_CONTROLLER_SIMULATE_H
#define CARP_CONTROLLER_SIMULATE_H

#include <stdio.h>

/* argv[0] is "simulate". Returns the exit status: 0, 2 for bad flags or a
 * bad snapshot, 1 when the simulation fails. */
int carp_simulate_main(int argc, char **argv, FILE *out, FILE *err);

#endif
