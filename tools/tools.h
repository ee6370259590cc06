/* The `drape` tool's subcommands, one file each. */
#ifndef DRAPE_TOOLS_H
#define DRAPE_TOOLS_H

int drape_cmd_sim(int argc, char **argv); /* sim_cmd.c */
int drape_cmd_load(int argc, char **argv); /* load_cmd.c */

#endif
