/* forkd guest protocol constants (see docs/guest-protocol.md). */
#ifndef FORKD_PROTO_H
#define FORKD_PROTO_H

#define FORKD_GUEST_PROTOCOL 3
#define FORKD_GUEST_PROTOCOL_MIN 1
#define FORKD_AGENT_NAME "forkd-guest/3"

#define MAX_FRAME (1024u * 1024u + 64u) /* max value of the length field */
#define MAX_DATA (64u * 1024u)          /* max raw bytes in DATA/STDIN/STDOUT */
#define MAX_STR (64u * 1024u)           /* max str value */
#define RING_MAX (1024u * 1024u)        /* per-process output ring */
#define MAX_CLIENTS 256
#define MAX_EXITED 64
#define OUT_SOFT (64u * 1024u)          /* generators stop above this */
#define HOLD_MS 30000                   /* after DETACH: keep output this long once the host is back */
#define HOLD_AWAY_MS 3600000            /* ... and until it is (its next connection), at most this long */
#define MAX_XATTRS 64                   /* v3: user.* xattrs per request or ENTRY */
#define MAX_XATTR_VALUE 4096u           /* v3: bytes of one value (longer ones are not reported) */

/* keys */
enum {
  K_VERSION = 1, K_AGENT = 2, K_ARG = 3, K_ENV = 4, K_CWD = 5, K_USER = 6,
  K_TAG = 7, K_PTY = 8, K_COLS = 9, K_ROWS = 10, K_PID = 11, K_SIGNAL = 12,
  K_EXIT_CODE = 13, K_PATH = 14, K_DST = 15, K_DEPTH = 16, K_RECURSIVE = 17,
  K_SIZE = 18, K_MODE = 19, K_MTIME = 20, K_TYPE = 21, K_NAME = 22,
  K_LINK = 23, K_CODE = 24, K_MESSAGE = 25, K_EVENT = 26, K_PROC = 27,
  K_RUNNING = 28, K_STDIN = 29, K_APPEND = 30, K_UID = 31, K_GID = 32,
  K_DROPPED = 33, K_ENTRIES = 34, K_DATA = 35, K_EOF = 36, K_OFFSET = 37,
  K_TOKEN = 38, K_DUMPABLE = 39, K_XATTR = 40, K_XATTR_REPLACE = 41,
  K_MAXKEY = 41
};

/* frame types */
enum {
  T_HELLO = 0x01, T_HELLO_OK = 0x02, T_OK = 0x03, T_ERROR = 0x04,
  T_SPAWN = 0x10, T_ATTACH = 0x11, T_LIST_PROCS = 0x12, T_KILL = 0x13,
  T_INFO = 0x14, T_WRITE_STDIN = 0x15, T_DUMPABLE = 0x16,
  T_STDIN = 0x20, T_STDIN_EOF = 0x21, T_SIGNAL = 0x22, T_RESIZE = 0x23,
  T_ACK = 0x24, T_DETACH = 0x25,
  T_READ_FILE = 0x30, T_WRITE_FILE = 0x31, T_LIST_DIR = 0x32, T_STAT = 0x33,
  T_MKDIR = 0x34, T_MOVE = 0x35, T_REMOVE = 0x36, T_WATCH = 0x37,
  T_DATA = 0x40, T_END = 0x41,
  T_STARTED = 0x50, T_STDOUT = 0x51, T_STDERR = 0x52, T_EXIT = 0x53,
  T_DROPPED = 0x54, T_PROCF = 0x55, T_ENTRY = 0x56, T_EVENT = 0x57,
  T_DETACHED = 0x58
};

#endif
