/* The `drape` tool's subcommands, one file each. */
#ifndef DRAPE_TOOLS_H
#define DRAPE_TOOLS_H

int drape_cmd_sim(int argc, char **argv); /* sim_cmd.c */

#endif
