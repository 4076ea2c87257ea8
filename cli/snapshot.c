/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tracerd snapshot REPO -o FILE [--since DURATION]: the front end of the
 * emergency and on-demand dump (chunkfmt/snapshot.c does the work). */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "../chunkfmt/chunkfmt.h"

static void usage(FILE *f)
{
	fputs("usage: tracerd snapshot REPO -o FILE [--since DURATION]\n"
	      "\n"
	      "Write the chunks of repository REPO, in sequence order, into one file.\n"
	      "An unfinished chunk (being written, or its writer died) is repaired: its\n"
	      "whole blocks are kept and it is closed properly.\n"
	      "\n"
	      "  -o, --output FILE    the snapshot to write\n"
	      "      --since DURATION only chunks written in the last DURATION (5m, 2h)\n",
		f);
}

int cmd_snapshot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "since", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *repo, *out = NULL;
	unsigned chunks = 0, repaired = 0;
	uint64_t since = 0, bytes = 0;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 's':
			if (!td_parse_duration("--since", optarg, &since))
				return TD_EXIT_USAGE;
			break;
		case 'h':
			usage(stdout);
			return TD_EXIT_OK;
		default:
			return td_bad_option("snapshot", c, argv);
		}
	}
	if (optind + 1 != argc || !out) {
		td_msg("snapshot: give one repository and -o FILE; see tracerd snapshot --help");
		return TD_EXIT_USAGE;
	}
	repo = argv[optind];
	r = repo_snapshot(repo, out, since, &chunks, &repaired, &bytes);
	switch (r) {
	case 0:
		printf("%s: %u chunk%s (%u repaired), %llu byte%s\n", out, chunks, td_plural(chunks),
			repaired, (unsigned long long)bytes, td_plural(bytes));
		return TD_EXIT_OK;
	case -ENODATA:
		td_msg("%s holds no chunks: nothing to snapshot", repo);
		return TD_EXIT_USAGE;
	case -ENOSPC:
		td_msg("cannot write snapshot %s: %s; free space and try again (the repository "
		       "is unchanged)",
			out, td_strerror(r));
		return TD_EXIT_IO;
	case -TD_E_NOTREG:
		td_msg("%s is not a regular file or directory; give the repository directory "
		       "tracerd records into",
			repo);
		return TD_EXIT_USAGE;
	case -ENOENT:
	case -ENOTDIR:
		td_msg("cannot read repository %s: %s; give the directory tracerd records into",
			repo, td_strerror(r));
		return TD_EXIT_USAGE;
	default:
		td_msg("cannot write snapshot %s: %s", out, td_strerror(r));
		return TD_EXIT_IO;
	}
}
