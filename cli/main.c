/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd: entry point and subcommand dispatch. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "../common/td.h"

static void usage(FILE *f)
{
	fputs("usage: tracerd COMMAND [OPTIONS]\n"
	      "\n"
	      "Out-of-process sampling profiler for native Linux programs.\n"
	      "\n"
	      "commands:\n"
	      "  [record] --pid PID         sample PID into a repository (the daemon)\n"
	      "  dump --pid PID             print the stack of every thread of PID, once\n"
	      "  report [PATH]...           tables, call tree, folded, pprof, speedscope,\n"
	      "                             html flame graph of recordings\n"
	      "  snapshot REPO -o FILE      one file from a repository's chunks, repairing\n"
	      "                             an unfinished one (the emergency dump)\n"
	      "  verify PATH...             check chunk files and repositories\n"
	      "  service [--config FILE]    the system service: follow the processes a\n"
	      "                             config names (tracerd.conf(5))\n"
	      "\n"
	      "  tracerd COMMAND --help   options of a command\n"
	      "  tracerd --version        version\n"
	      "\n"
	      "See tracerd(8).\n",
		f);
}

int main(int argc, char **argv)
{
	/* A SIGCHLD left ignored by whoever started us (a shell, a service
	 * manager) makes the kernel drop the notices of our tracees' stops:
	 * every signal for the target would then wait, with the target
	 * stopped, for our next poll timeout. */
	signal(SIGCHLD, SIG_DFL);
	if (argc < 2) {
		usage(stderr);
		return TD_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return TD_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		puts("tracerd " TD_VERSION);
		return TD_EXIT_OK;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (argv[1][0] == '-')
		return cmd_record(argc, argv); /* tracerd --pid N */
	if (!strcmp(argv[1], "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(argv[1], "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "service"))
		return cmd_service(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot"))
		return cmd_snapshot(argc - 1, argv + 1);
	td_msg("unknown command '%s'; see tracerd --help", argv[1]);
	return TD_EXIT_USAGE;
}
