/* The start-up watchdog of the dpopt front end (startwatch.c). */
#ifndef DPO_CLI_STARTWATCH_H
#define DPO_CLI_STARTWATCH_H

/* seconds MPI start-up may take before a rank gives up (DPOPT_START_TIMEOUT overrides) */
#define DPO__START_DEFAULT 300
/* the exit status of a rank that gave up: 4, runtime failure (doc/reference.md's table) */
#define DPO__START_EXIT 4

/* Arms the alarm before MPI_Init.  Returns 0, or -1 when DPOPT_START_TIMEOUT is not a number
 * of seconds in [0, 86400] (the default bound is armed then; the caller refuses the value once
 * MPI is up, so that one rank says so). */
int dpo__start_watch_arm(void);
/* Disarms it once every rank has met after MPI_Init. */
void dpo__start_watch_disarm(void);

#endif
