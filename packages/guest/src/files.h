/* File operations: READ_FILE, WRITE_FILE, LIST_DIR, STAT, MKDIR, MOVE, REMOVE. */
#ifndef FORKD_FILES_H
#define FORKD_FILES_H
#include "agent.h"

void files_handle_read(struct client *c, const struct req *r);
int files_read_pump(struct client *c); /* 1 more to do, 0 wait, -1 close the connection */
void files_handle_write(struct client *c, const struct req *r);
int files_write_frame(struct client *c, uint8_t type, const uint8_t *p, size_t n);
void files_handle_list(struct client *c, const struct req *r);
int files_list_pump(struct client *c);
void files_handle_stat(struct client *c, const struct req *r);
void files_handle_mkdir(struct client *c, const struct req *r);
void files_handle_move(struct client *c, const struct req *r);
void files_handle_remove(struct client *c, const struct req *r);
void files_cleanup(struct client *c);

#endif
