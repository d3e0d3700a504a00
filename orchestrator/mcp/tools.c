/*
 * tools.c: the MCP tools and their execution through the session's agent
 * (docs/internals/agent-protocol.md).
 *
 * One row of tool_defs holds a tool: its name, what tools/list shows (title,
 * description, inputSchema, annotations, outputSchema), its handler and how
 * the call meets the session (flags). The inputSchema is also the argument
 * check: tools_init compiles each one (schema.c; a schema that does not
 * parse or uses a keyword the validator lacks fails startup), tools_run
 * checks the arguments against it before the session is touched, and
 * handlers read the checked values through schema_str/int/bool. Limits
 * that depend on the server's configuration cannot be in a static schema:
 * handlers check those, and say so.
 *
 * Results. Each handler does its I/O, then a *_result function of
 * toolres.c builds the CallToolResult from what the agent answered;
 * tools_run checks every result against the row's outputSchema and turns
 * a mismatch into a tool error rather than send it.
 *
 * Everything the agent returns is treated as hostile: parsed with size
 * caps, strings cleaned to valid UTF-8 (a NUL byte shown as U+2400, an
 * invalid byte as U+FFFD: areq.c, jsonu_utf8_clean), nothing
 * interpreted.
 */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/agentc.h"
#include "session/apps.h"
#include "areq.h"
#include "buf.h"
#include "filetools.h"
#include "toollive.h"
#include "log.h"
#include "lib/jsonu.h"
#include "schema.h"
#include "tasks.h"
#include "toolres.h"
#include "tools.h"
#include "xmalloc.h"

/*
 * Argument limits, written into the schemas below (as decimal literals, so
 * that XSTR can put them in the JSON text) and so shown by tools/list.
 */
#define MAX_COMMAND	1048576		/* 1 MiB: the agent's limit for a job's
					 * command (4 MiB for the shell's) */
#define MAX_FILE_TEXT	8388608		/* 8 MiB: old_str and new_str together
					 * stay inside the agent's 16 MiB body */
#define MAX_PATH_LEN	TOOLS_MAX_PATH
#define MAX_EDIT_CMD	32		/* longer than any edit command */
#define MAX_IMAGE	255		/* what the session record keeps */
#define MAX_OFFSET	1125899906842624	/* 2^50: beyond any job spool */
#define MAX_INSERT_LINE	1099511627776	/* 2^40: beyond any file's lines */
#define MAX_WAIT_S	86400		/* a day: the agent refuses longer; the
					 * server's own limit (tools.shell_max_
					 * timeout, 1 h by default) is the
					 * handlers' check */
#define MAX_POLL_BYTES	16777216	/* 16 MiB: tools.max_output's ceiling */
#define MAX_CPU_CORES	256		/* the runtimes' ceiling; the server's
					 * sandbox.max_cpu_millis is the
					 * handler's check (sessopt.c) */
#define MAX_QTY		32		/* a size or duration string */
#define MAX_FILE_BYTES	16777216	/* 16 MiB: files.tool_max_bytes'
					 * ceiling; the server's own cap is
					 * the handlers' check */
#define MAX_FILE_B64	22369624	/* base64 of MAX_FILE_BYTES */
#define MAX_FILE_OFFSET	9007199254740992	/* 2^53: exact in a double */
#define MAX_LIST	10000		/* list_files' entries */
#define DEF_LIST	TOOLS_DEF_LIST
#define STR_(x)		#x
#define XSTR(x)		STR_(x)

#define MARGIN_MS	15000
#define CANCEL_SHELL_GRACE_MS	8000	/* the interrupt job's 3 s and more */
#define CANCEL_RECHECK	20		/* tools_cancel: 100 ms rounds */
#define BUSY_RETRIES	100		/* 50 ms rounds after an interrupt */

/* How tools_run meets the session before the handler (tool_def.flags). */
#define TOOL_NO_SANDBOX	0x1	/* works on the session table: no sess_get */
#define TOOL_NO_ENTER	0x2	/* gets the session, does not enter it: the
				 * handler replaces the sandbox itself */
#define TOOL_INTERRUPT	0x4	/* a cancel interrupts the shell (tools_cancel) */
#define TOOL_UNCHANGED	0x8	/* a refused call says the sandbox is unchanged */
#define TOOL_IMAGES	0x10	/* its "image" property and description name the
				 * runtime's images (tools_set_images) */

/*
 * A handler. args were checked against the row's schema; s is NULL for
 * TOOL_NO_SANDBOX, entered unless TOOL_NO_ENTER. Always sets tc->result.
 */
#define TOOL_HANDLER(fn) static void fn(struct tool_call *tc, \
    struct sessmgr *m, struct sess *s, const struct conf *c, const cJSON *args)

TOOL_HANDLER(t_shell);
TOOL_HANDLER(t_shell_async);
TOOL_HANDLER(t_shell_poll);
TOOL_HANDLER(t_shell_wait);
TOOL_HANDLER(t_shell_stop);
TOOL_HANDLER(t_edit);
TOOL_HANDLER(t_create_sandbox);
TOOL_HANDLER(t_sandbox_status);
TOOL_HANDLER(t_clear_session);
TOOL_HANDLER(t_expose_port);
TOOL_HANDLER(t_list_apps);
TOOL_HANDLER(t_unexpose_port);

/* An app in the app tools' outputSchemas. */
#define APP_PROPS \
"\"name\":{\"type\":\"string\",\"description\":\"The app's name (a DNS label, part of its address).\"}," \
"\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,\"description\":\"The port in the sandbox it serves.\"}," \
"\"url\":{\"type\":\"string\",\"description\":\"Its address (no secret in it: requests need the token).\"}"

/* sandbox_status's structuredContent (sess_status in sess.c builds it). */
#define NUM_OR_NULL "{\"type\":[\"number\",\"null\"]}"
#define SANDBOX_STATUS_OUT "{\"type\":\"object\",\"properties\":{"		\
	"\"id\":{\"type\":\"string\"},\"org\":{\"type\":\"string\"},"		\
	"\"user\":{\"type\":\"string\"},"					\
	"\"state\":{\"type\":\"string\",\"enum\":[\"none\",\"running\",\"frozen\",\"stopped\",\"provisioning\"]}," \
	"\"sandbox_id\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"	\
	"\"run_as_root\":{\"type\":\"boolean\"},\"writable_root\":{\"type\":\"boolean\"}," \
	"\"use_kata\":{\"type\":\"boolean\"},"					\
	"\"limits\":{\"type\":\"object\",\"properties\":{"				\
	"\"cpu\":{\"type\":\"number\"},\"memory_bytes\":{\"type\":\"number\"},"	\
	"\"memory_reservation_bytes\":{\"type\":\"number\",\"description\":\"Memory the sandbox was admitted with (memory_bytes is its ceiling).\"}," \
	"\"disk_bytes\":{\"type\":\"number\"},\"pids\":{\"type\":\"number\"},"	\
	"\"lifetime_ms\":{\"type\":\"number\"},\"idle_timeout_ms\":{\"type\":\"number\"}}," \
	"\"required\":[\"cpu\",\"memory_bytes\",\"disk_bytes\",\"lifetime_ms\",\"idle_timeout_ms\"]}," \
	"\"created_ms\":{\"type\":\"number\"},\"started_ms\":{\"type\":\"number\"},"	\
	"\"stopped_ms\":{\"type\":\"number\"},\"last_used_ms\":{\"type\":\"number\"},"	\
	"\"calls_in_flight\":{\"type\":\"number\"},"					\
	"\"uptime_ms\":" NUM_OR_NULL ",\"lifetime_left_ms\":" NUM_OR_NULL ","		\
	"\"idle_left_ms\":" NUM_OR_NULL ",\"idle_ms\":" NUM_OR_NULL ","		\
	"\"frozen_ms\":" NUM_OR_NULL ","						\
	"\"policy\":{\"type\":\"object\",\"description\":\"The session's credential policy (what the proxy lets it do with GitHub/GitLab), set by the operator or a trusted client; absent: none.\"," \
	"\"properties\":{\"github\":{\"type\":\"object\",\"properties\":{}},"	\
	"\"gitlab\":{\"type\":\"object\",\"properties\":{}}}},"			\
	"\"credentials\":{\"type\":\"array\",\"description\":\"The named credentials the egress proxy adds to this sandbox's requests (names only: the sandbox never holds a value), each with hosts (the host names or globs it is sent to), env (the variables set to a stand-in the proxy swaps for the value) and files (client files written in the home, paths relative to it), all arrays of strings; absent: not known yet.\"," \
	"\"items\":{\"type\":\"object\",\"properties\":{"			\
	"\"name\":{\"type\":\"string\"},\"form\":{\"type\":\"string\"}},"	\
	"\"required\":[\"name\",\"form\"]}},"					\
	"\"credentials_from\":{\"type\":\"string\",\"enum\":[\"policy\",\"defaults\"],\"description\":\"Whether the session's policy named them or they are the proxy's defaults.\"}," \
	"\"usage\":{\"type\":\"object\",\"properties\":{"				\
	"\"memory_bytes\":" NUM_OR_NULL ",\"disk_bytes\":" NUM_OR_NULL ","		\
	"\"disk_partial\":{\"type\":\"boolean\"},\"oom_kills\":" NUM_OR_NULL "}},"	\
	"\"busy\":{\"type\":\"boolean\"},\"last_activity_ms\":" NUM_OR_NULL ","		\
	"\"running_jobs\":{\"type\":\"number\"},"					\
	"\"jobs\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" \
	"\"id\":{\"type\":\"string\"},\"command\":{\"type\":\"string\"},"		\
	"\"pid\":" NUM_OR_NULL ",\"started_ms\":" NUM_OR_NULL "},"			\
	"\"required\":[\"id\",\"command\"]}}},"						\
	"\"required\":[\"id\",\"state\",\"sandbox_id\",\"image\",\"limits\",\"usage\"," \
	"\"busy\",\"running_jobs\",\"jobs\"],\"additionalProperties\":false}"

/*
 * The job tools' outputSchemas: a job's state (shell_stop), and with the
 * output read (shell_poll, shell_wait). One property a line.
 */
#define JOB_STATE_PROPS \
"\"job_id\":{\"type\":\"string\",\"description\":\"The job's id.\"}," \
"\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\",\"signaled\",\"stopped\",\"unknown\"],\"description\":\"running, exited (see exit_code), signaled (see signal), stopped (by shell_stop).\"}," \
"\"exit_code\":{\"type\":\"integer\",\"description\":\"The exit status, once exited.\"}," \
"\"signal\":{\"type\":\"integer\",\"description\":\"The signal that ended it, if one did.\"}," \
"\"oom_killed\":{\"type\":\"boolean\",\"description\":\"Killed because the sandbox ran out of memory.\"}," \
"\"output_bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Output bytes kept so far.\"}," \
"\"truncated\":{\"type\":\"boolean\",\"description\":\"Output beyond the spool's cap was dropped.\"}," \
"\"dropped_bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Output bytes dropped.\"}"
#define JOB_STATE_REQUIRED \
"\"job_id\",\"state\",\"oom_killed\",\"output_bytes\",\"truncated\",\"dropped_bytes\""
#define JOB_OUTPUT_SCHEMA \
"{\"type\":\"object\",\"properties\":{" \
JOB_STATE_PROPS "," \
"\"output\":{\"type\":\"string\",\"description\":\"Output from the offset asked for, as text (NUL as U+2400, bytes that are not UTF-8 as U+FFFD).\"}," \
"\"next_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The byte offset to read on from.\"}," \
"\"eof\":{\"type\":\"boolean\",\"description\":\"Finished, and all output read.\"}" \
"},\"required\":[" JOB_STATE_REQUIRED ",\"output\",\"next_offset\",\"eof\"],\"additionalProperties\":false}"

/*
 * The tools. Descriptions are written for the model that calls them: what
 * the tool does, what persists, and what to do when it fails. Titles and
 * descriptions are plain text; schema, annotations and output are JSON.
 */
static const struct tool_def {
	const char	*name;
	const char	*title;
	const char	*description;
	const char	*schema;	/* inputSchema: also the argument checks */
	const char	*annotations;
	void		(*handler)(struct tool_call *, struct sessmgr *,
			    struct sess *, const struct conf *, const cJSON *);
	unsigned	 flags;		/* TOOL_* */
	/* outputSchema: what every structuredContent of the tool holds,
	 * checked on each result (tools_run) and by test_orch_results */
	const char	*output;
} tool_defs[] = {
{ "shell", "Run a shell command",
"Runs a command in this session's persistent bash shell inside an isolated Linux sandbox and returns its combined stdout+stderr and exit code. "
"The shell keeps its state between calls: working directory (starts in /workspace), exported variables, functions and aliases. "
"stdin is /dev/null, so interactive prompts get EOF: pass -y/--yes flags. "
"If the command runs longer than timeout seconds it is killed with all its child processes and the shell keeps its state; for long builds, servers or anything that may exceed a few minutes use shell_async instead. "
"Long output keeps its head and tail with the middle replaced by a marker; redirect to a file and view it in parts when you need everything. "
"Output is returned as text: a NUL byte shows as \xe2\x90\x80 (U+2400) and each byte that is not UTF-8 as \xef\xbf\xbd (U+FFFD). "
"A command that timed out reports exit code 124, as timeout(1) does. "
"Network access is only through the sandbox's egress proxy (git clone/push to configured hosts works without credentials in the sandbox).",
"{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_COMMAND) ",\"description\":\"The bash command line to run, e.g. \\\"cd repo && make test\\\". Multi-line scripts are allowed.\"},"
"\"timeout\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" XSTR(MAX_WAIT_S) ",\"description\":\"Seconds before the command is killed (default 120; at most the server's limit, 3600 unless configured).\"}"
"},\"required\":[\"command\"],\"additionalProperties\":false}",
"{\"title\":\"Run a shell command\",\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":true}",
t_shell, TOOL_INTERRUPT,
"{\"type\":\"object\",\"properties\":{"
"\"exit_code\":{\"type\":\"integer\",\"description\":\"The command's exit status; 124 when it timed out (as timeout(1) reports), -1 when it was interrupted.\"},"
"\"output\":{\"type\":\"string\",\"description\":\"stdout and stderr interleaved, as text (NUL as U+2400, bytes that are not UTF-8 as U+FFFD); when long, head and tail around a marker.\"},"
"\"timed_out\":{\"type\":\"boolean\",\"description\":\"The command ran past its timeout and was killed with its child processes.\"},"
"\"truncated\":{\"type\":\"boolean\",\"description\":\"The middle of the output was dropped.\"},"
"\"dropped_bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Output bytes dropped from the middle.\"},"
"\"duration_ms\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"How long the command ran.\"},"
"\"oom_killed\":{\"type\":\"boolean\",\"description\":\"The sandbox ran out of memory and the command was killed.\"},"
"\"shell_restarted\":{\"type\":\"boolean\",\"description\":\"The shell exited and a fresh one was started (cwd and variables reset).\"},"
"\"previous_interrupted\":{\"type\":\"boolean\",\"description\":\"The previous command was stopped because the call that ran it went away (the orchestrator restarted or its client disconnected); its output is lost.\"}"
"},\"required\":[\"exit_code\",\"output\",\"timed_out\",\"truncated\",\"dropped_bytes\",\"duration_ms\",\"oom_killed\",\"shell_restarted\"],\"additionalProperties\":false}" },

{ "shell_async", "Start a background command",
"Starts a command in the background (a job) and returns its job_id at once. It runs in the shell's current directory with its exported variables, in its own process group, and its output is kept in the sandbox (it survives orchestrator restarts). "
"Use shell_poll to read output incrementally, shell_wait to wait for it to finish, shell_stop to kill it.",
"{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_COMMAND) ",\"description\":\"The bash command line to run in the background, e.g. \\\"npm run build\\\".\"}"
"},\"required\":[\"command\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":true}",
t_shell_async, 0,
"{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"description\":\"The job's id, for shell_poll, shell_wait and shell_stop.\"},"
"\"pid\":{\"type\":\"integer\",\"description\":\"The job's process id in the sandbox.\"}"
"},\"required\":[\"job_id\",\"pid\"],\"additionalProperties\":false}" },

{ "shell_poll", "Read a background job's output",
"Returns a background job's state (running, exited, signaled, stopped), exit code, and its output starting at byte offset. "
"Pass the next_offset from the previous poll to read only new output; eof is true once the job has finished and everything was read. "
"Offsets count the job's output bytes; the text shows a NUL byte as \xe2\x90\x80 (U+2400) and each byte that is not UTF-8 as \xef\xbf\xbd (U+FFFD).",
"{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_JOB_ID) ",\"pattern\":\"^[A-Za-z0-9_.-]{1," XSTR(MAX_JOB_ID) "}$\",\"description\":\"The job_id returned by shell_async.\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" XSTR(MAX_OFFSET) ",\"description\":\"Byte offset in the job's output to read from (default 0: from the start).\"},"
"\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" XSTR(MAX_POLL_BYTES) ",\"description\":\"Most output bytes to return (default: the server's output limit).\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"openWorldHint\":false}",
t_shell_poll, 0,
JOB_OUTPUT_SCHEMA },

{ "shell_wait", "Wait for a background job",
"Waits until a background job finishes or timeout seconds pass, then returns its state, exit code and output from offset (default: all of it, head and tail kept when long). "
"If it is still running when the timeout passes (state running), call shell_wait again or shell_poll later: the job itself has no timeout. "
"The text shows a NUL byte as \xe2\x90\x80 (U+2400) and each byte that is not UTF-8 as \xef\xbf\xbd (U+FFFD).",
"{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_JOB_ID) ",\"pattern\":\"^[A-Za-z0-9_.-]{1," XSTR(MAX_JOB_ID) "}$\",\"description\":\"The job_id returned by shell_async.\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" XSTR(MAX_OFFSET) ",\"description\":\"Byte offset in the job's output to return from (default 0).\"},"
"\"timeout\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" XSTR(MAX_WAIT_S) ",\"description\":\"Most seconds to wait (default 30).\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"openWorldHint\":false}",
t_shell_wait, 0,
JOB_OUTPUT_SCHEMA },

{ "shell_stop", "Stop a background job",
"Stops a background job: its whole process tree gets SIGTERM, then SIGKILL after 2 seconds. Returns its final state. Stopping a finished job is harmless.",
"{\"type\":\"object\",\"properties\":{"
"\"job_id\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_JOB_ID) ",\"pattern\":\"^[A-Za-z0-9_.-]{1," XSTR(MAX_JOB_ID) "}$\",\"description\":\"The job_id returned by shell_async.\"}"
"},\"required\":[\"job_id\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}",
t_shell_stop, 0,
"{\"type\":\"object\",\"properties\":{"
JOB_STATE_PROPS
"},\"required\":[" JOB_STATE_REQUIRED "],\"additionalProperties\":false}" },

{ "str_replace_based_edit_tool", "View and edit files",
"Views and edits files in the sandbox. Paths are absolute or relative to /workspace. Commands: "
"view (a file with line numbers, optionally only view_range [first, last] with last -1 meaning the end; a directory lists files two levels deep); "
"create (writes file_text to path, replacing any file there, creating parent directories); "
"str_replace (replaces old_str, which must occur exactly once in the file, with new_str; include enough surrounding lines to make it unique, and match whitespace exactly); "
"insert (inserts insert_text after line insert_line; 0 inserts at the top). Writes are atomic.",
"{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_EDIT_CMD) ",\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\"],\"description\":\"The operation.\"},"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_PATH_LEN) ",\"description\":\"File or directory path, e.g. /workspace/src/main.c.\"},"
"\"file_text\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_FILE_TEXT) ",\"description\":\"create only: the whole content of the new file.\"},"
"\"old_str\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_FILE_TEXT) ",\"description\":\"str_replace only: the exact text to replace (must occur exactly once).\"},"
"\"new_str\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_FILE_TEXT) ",\"description\":\"str_replace only: the replacement text (may be empty to delete old_str).\"},"
"\"insert_text\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_FILE_TEXT) ",\"description\":\"insert only: the text to insert.\"},"
"\"insert_line\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" XSTR(MAX_INSERT_LINE) ",\"description\":\"insert only: the line number after which to insert (0 = top of the file).\"},"
"\"view_range\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"},\"minItems\":2,\"maxItems\":2,\"description\":\"view only: [first_line, last_line], 1-based, last_line -1 for the end of the file.\"}"
"},\"required\":[\"command\",\"path\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"openWorldHint\":false}",
t_edit, 0,
"{\"type\":\"object\",\"properties\":{"
"\"command\":{\"type\":\"string\",\"enum\":[\"view\",\"create\",\"str_replace\",\"insert\"],\"description\":\"The operation done.\"},"
"\"path\":{\"type\":\"string\",\"description\":\"The path as given.\"},"
"\"content\":{\"type\":\"string\",\"description\":\"view: the file with line numbers, or the directory listing.\"},"
"\"snippet\":{\"type\":\"string\",\"description\":\"str_replace: the edited part of the file with line numbers.\"},"
"\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"create: the bytes written.\"},"
"\"insert_line\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"insert: the line the text was inserted after.\"}"
"},\"required\":[\"command\",\"path\"],\"additionalProperties\":false}" },

{ "read_file", "Read a file",
"Reads a file in the sandbox, bytes exact. Paths are absolute or relative to /workspace; a symlink is followed inside the sandbox. "
"encoding \"text\" (the default) returns UTF-8 text and refuses a file that is not UTF-8 (binary): read those with encoding \"base64\". "
"Reads at most max_bytes from byte offset (default 0; max_bytes defaults to and is capped by the server's limit, 1 MiB unless configured); next_offset and eof say where to read on. "
"size, version (changes whenever the content changes) and mode describe the file.",
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_PATH_LEN) ",\"description\":\"The file, e.g. /workspace/build/app.tar.gz.\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":" XSTR(MAX_FILE_OFFSET) ",\"description\":\"Byte offset to read from (default 0).\"},"
"\"max_bytes\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" XSTR(MAX_FILE_BYTES) ",\"description\":\"Most bytes to read (default and ceiling: the server's files.tool_max_bytes, 1 MiB unless configured).\"},"
"\"encoding\":{\"type\":\"string\",\"maxLength\":16,\"enum\":[\"text\",\"base64\"],\"description\":\"text (UTF-8, the default) or base64 (any bytes).\"}"
"},\"required\":[\"path\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
filetools_read, 0,
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"description\":\"The file read, absolute (a symlink resolved).\"},"
"\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"],\"description\":\"How content is encoded.\"},"
"\"content\":{\"type\":\"string\",\"description\":\"The bytes read: UTF-8 text, or base64.\"},"
"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The byte offset read from.\"},"
"\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"How many bytes content holds (decoded).\"},"
"\"size\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The file's size in bytes.\"},"
"\"next_offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The offset to read on from.\"},"
"\"eof\":{\"type\":\"boolean\",\"description\":\"The read reached the end of the file.\"},"
"\"version\":{\"type\":\"string\",\"description\":\"The file's version stamp (16 hex digits; changes whenever its content changes, and may on chmod or touch).\"},"
"\"mode\":{\"type\":\"string\",\"description\":\"Its permission bits, octal (e.g. 0644).\"},"
"\"mtime_ms\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Its modification time, ms since the epoch.\"}"
"},\"required\":[\"path\",\"encoding\",\"content\",\"offset\",\"bytes\",\"size\",\"next_offset\",\"eof\",\"version\",\"mode\"],\"additionalProperties\":false}" },

{ "write_file", "Write a file",
"Writes a file in the sandbox, bytes exact and atomically (readers see the old file or the whole new one; a failed write leaves the old one). "
"Paths are absolute or relative to /workspace; missing parent directories are created; a symlink is followed inside the sandbox. "
"content is UTF-8 text (encoding \"text\", the default) or base64 of any bytes (encoding \"base64\"); at most the server's limit (1 MiB unless configured) per call: write bigger files in parts with append. "
"append: true adds content to the end of the file. mode sets the permission bits (octal string, e.g. \"0755\"; default: the old file's, or 0644).",
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_PATH_LEN) ",\"description\":\"The file, e.g. /workspace/data/input.bin.\"},"
"\"content\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_FILE_B64) ",\"description\":\"The bytes to write: text, or base64 when encoding is base64.\"},"
"\"encoding\":{\"type\":\"string\",\"maxLength\":16,\"enum\":[\"text\",\"base64\"],\"description\":\"text (the default) or base64.\"},"
"\"mode\":{\"type\":\"string\",\"maxLength\":5,\"pattern\":\"^0?[0-7]{3,4}$\",\"description\":\"Permission bits, octal, e.g. \\\"0644\\\" or \\\"755\\\".\"},"
"\"append\":{\"type\":\"boolean\",\"description\":\"Add content at the end of the file instead of replacing it (default false).\"}"
"},\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":false}",
filetools_write, 0,
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"description\":\"The path as given.\"},"
"\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Bytes written by this call.\"},"
"\"size\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"The file's size now.\"},"
"\"version\":{\"type\":\"string\",\"description\":\"Its new version stamp.\"},"
"\"created\":{\"type\":\"boolean\",\"description\":\"There was no file before.\"},"
"\"append\":{\"type\":\"boolean\",\"description\":\"The content was appended.\"}"
"},\"required\":[\"path\",\"bytes\",\"size\",\"version\",\"created\",\"append\"],\"additionalProperties\":false}" },

{ "list_files", "List files",
"Lists a directory in the sandbox: each entry's path, name, type (file, dir, symlink, other), size, mtime_ms, mode, and for files a version stamp that changes whenever the content changes. "
"recursive: true lists the whole tree, depth first, names sorted; symlinks are listed with their target and never followed. "
"At most max_entries entries (default 1000, at most 10000); truncated says when there were more. A file's path lists that one file.",
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_PATH_LEN) ",\"description\":\"The directory (or file), e.g. /workspace or src.\"},"
"\"recursive\":{\"type\":\"boolean\",\"description\":\"List subdirectories too (default false).\"},"
"\"max_entries\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":" XSTR(MAX_LIST) ",\"description\":\"Most entries to return (default " XSTR(DEF_LIST) ").\"}"
"},\"required\":[\"path\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
filetools_list, 0,
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"description\":\"The path listed, absolute.\"},"
"\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"
"\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"dir\",\"symlink\",\"other\"]},"
"\"size\":{\"type\":\"integer\",\"minimum\":0},\"mtime_ms\":{\"type\":\"integer\",\"minimum\":0},"
"\"mode\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"},\"target\":{\"type\":\"string\"}},"
"\"required\":[\"path\",\"name\",\"type\",\"size\",\"mtime_ms\",\"mode\"],\"additionalProperties\":false}},"
"\"truncated\":{\"type\":\"boolean\",\"description\":\"More entries than max_entries: some are left out.\"},"
"\"count\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"How many entries are listed.\"}"
"},\"required\":[\"path\",\"entries\",\"truncated\",\"count\"],\"additionalProperties\":false}" },

{ "delete_file", "Delete a file",
"Deletes a file, a symlink (the link itself, never what it points to) or an empty directory in the sandbox; recursive: true deletes a directory and everything in it (symlinks met on the way are removed, never followed). "
"/workspace itself and / are refused.",
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(MAX_PATH_LEN) ",\"description\":\"What to delete, e.g. /workspace/build.\"},"
"\"recursive\":{\"type\":\"boolean\",\"description\":\"Delete a non-empty directory with everything in it (default false).\"}"
"},\"required\":[\"path\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
filetools_delete, 0,
"{\"type\":\"object\",\"properties\":{"
"\"path\":{\"type\":\"string\",\"description\":\"The path as given.\"},"
"\"deleted\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Entries removed (files, links and directories).\"}"
"},\"required\":[\"path\",\"deleted\"],\"additionalProperties\":false}" },

{ "create_sandbox", "Create a new sandbox",
"Replaces this session's sandbox with a new one built from the given image and settings. By default the new sandbox starts with a copy of /workspace (the same files on another OS); fresh_workspace: true starts it empty instead. "
"Nothing else carries over: shell state, background jobs and anything installed or changed outside /workspace are gone. "
"Everything is checked first and the old sandbox is replaced only once the new one is ready: if the call fails, your sandbox and its /workspace are unchanged. "
"Limits (cpu, memory, memory_reservation, disk, lifetime, idle_timeout) default to the server's and may be raised up to its maxima; sandbox_status shows what a sandbox has. "
"You do not need this to start: the first tool call of a session creates a default sandbox. "
"How long a sandbox lives: it is kept between calls; left idle (no call, no command running) it is frozen and later stopped, and past its lifetime it is stopped (the server's limits unless lifetime/idle_timeout are given; sandbox_status shows idle_left_ms and lifetime_left_ms). "
"A stopped sandbox keeps /workspace and its other files, and the next call starts it again with a fresh shell and no background jobs; it is deleted with its files after the server's retention (a day by default).",
"{\"type\":\"object\",\"properties\":{"
"\"image\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_IMAGE) ",\"description\":\"Image to build the sandbox from (default: the server's default image).\"},"
"\"use_kata\":{\"type\":\"boolean\",\"description\":\"Run under a VM-based runtime (Kata) for stronger isolation; only where the server offers it (default false).\"},"
"\"run_as_root\":{\"type\":\"boolean\",\"description\":\"Run commands as root inside the sandbox, with the capabilities package managers and admin tools need (apt-get, dpkg, useradd, su, chown work); root there is not root on the host (default true). false: an unprivileged user with no capabilities.\"},"
"\"writable_root\":{\"type\":\"boolean\",\"description\":\"Allow writes outside /workspace, e.g. to install packages (default true).\"},"
"\"cpu\":{\"type\":\"number\",\"minimum\":0,\"maximum\":" XSTR(MAX_CPU_CORES) ",\"description\":\"CPU limit in cores, e.g. 0.5 or 2 (default: the server's).\"},"
"\"memory\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_QTY) ",\"description\":\"Memory limit, the most the sandbox may use, e.g. \\\"512MiB\\\" or \\\"4GiB\\\" (default: the server's).\"},"
"\"memory_reservation\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_QTY) ",\"description\":\"Memory set aside for the sandbox on the host, e.g. \\\"256MiB\\\": what the server admits it with and keeps from being reclaimed; at most its memory limit (default: the server's).\"},"
"\"disk\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_QTY) ",\"description\":\"Disk limit for the sandbox's files, e.g. \\\"10GiB\\\" (default: the server's).\"},"
"\"lifetime\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_QTY) ",\"description\":\"How long the sandbox may run before it is stopped (files kept), e.g. \\\"4h\\\" (default: the server's).\"},"
"\"idle_timeout\":{\"type\":\"string\",\"maxLength\":" XSTR(MAX_QTY) ",\"description\":\"How long without calls, commands or CPU work before it is frozen (processes kept in memory, thawed by the next call in milliseconds; where the server cannot freeze: stopped, files kept), e.g. \\\"30m\\\".\"},"
"\"fresh_workspace\":{\"type\":\"boolean\",\"description\":\"Start with an empty /workspace instead of a copy of the current one (default false). The old files are deleted with the old sandbox.\"}"
"},\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":false}",
t_create_sandbox, TOOL_NO_ENTER | TOOL_UNCHANGED | TOOL_IMAGES,
"{\"type\":\"object\",\"properties\":{"
"\"sandbox_id\":{\"type\":\"string\",\"description\":\"The new sandbox's id.\"},"
"\"image\":{\"type\":\"string\",\"description\":\"The image the new sandbox runs.\"}"
"},\"required\":[\"sandbox_id\",\"image\"],\"additionalProperties\":false}" },

{ "sandbox_status", "Show this session's sandbox",
"Shows this session's sandbox without changing it: image, state, settings, limits (cpu, memory, disk, lifetime, idle timeout), how long it has run and how long is left before the lifetime or idle limit stops it, memory and disk in use, whether a command is running, the running background jobs, the org and user it works for at the egress proxy, and the named credentials the proxy adds to its requests (name, form, hosts, the variables and files that stand in for them; never a value). "
"It does not start a stopped sandbox.",
"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
t_sandbox_status, TOOL_NO_ENTER, SANDBOX_STATUS_OUT },

{ "clear_session", "Delete this session's sandbox",
"Deletes this session's sandbox and everything in it (workspace, shell, jobs). The next tool call starts a fresh default sandbox.",
"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
t_clear_session, TOOL_NO_SANDBOX,
"{\"type\":\"object\",\"properties\":{"
"\"cleared\":{\"type\":\"boolean\",\"description\":\"The session has no sandbox now.\"},"
"\"had_sandbox\":{\"type\":\"boolean\",\"description\":\"It had one, which was deleted.\"}"
"},\"required\":[\"cleared\",\"had_sandbox\"],\"additionalProperties\":false}" },

{ "expose_port", "Publish a web app",
"Publishes a web server running in the sandbox at its own address, so the person you work for can open it in a browser (a dev server, a dashboard, docs, a notebook; WebSockets work). "
"Start the server first (with shell_async, listening on 0.0.0.0 or 127.0.0.1 at port), then call this. "
"It returns the app's url and a token: the person opens url?token=<token> once (the browser then keeps it in a cookie for that address); scripts send Authorization: Bearer <token>. Every request needs the token and the app never sees it. "
"Each app gets its own host, so absolute paths (/static/app.js) work unchanged. The same name again replaces that app and gives a new token. The app ends with the sandbox (clear_session, create_sandbox).",
"{\"type\":\"object\",\"properties\":{"
"\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,\"description\":\"The TCP port the server listens on inside the sandbox, e.g. 8000.\"},"
"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(APP_NAME_MAX) ",\"pattern\":\"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$\",\"description\":\"A short name for the app, part of its address: lower-case letters, digits and '-' (default p<port>).\"}"
"},\"required\":[\"port\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":false,\"openWorldHint\":true}",
t_expose_port, 0,
"{\"type\":\"object\",\"properties\":{"
APP_PROPS ","
"\"token\":{\"type\":\"string\",\"description\":\"The app's token, shown only now.\"}"
"},\"required\":[\"name\",\"port\",\"url\",\"token\"],\"additionalProperties\":false}" },

{ "list_apps", "List published web apps",
"Lists the web apps this session's sandbox publishes (expose_port): name, port and address of each. Tokens are not shown again: expose_port with the same name gives a new one.",
"{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
"{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}",
t_list_apps, TOOL_NO_ENTER,
"{\"type\":\"object\",\"properties\":{"
"\"apps\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" APP_PROPS "},"
"\"required\":[\"name\",\"port\",\"url\"],\"additionalProperties\":false}}"
"},\"required\":[\"apps\"],\"additionalProperties\":false}" },

{ "unexpose_port", "Stop publishing a web app",
"Stops publishing an app (by the name expose_port gave it): its address answers 404 at once and its token no longer works. The server in the sandbox keeps running.",
"{\"type\":\"object\",\"properties\":{"
"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":" XSTR(APP_NAME_MAX) ",\"description\":\"The app's name, as list_apps shows it.\"}"
"},\"required\":[\"name\"],\"additionalProperties\":false}",
"{\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":false}",
t_unexpose_port, TOOL_NO_ENTER,
"{\"type\":\"object\",\"properties\":{"
"\"name\":{\"type\":\"string\",\"description\":\"The app that is no longer published.\"},"
"\"unexposed\":{\"type\":\"boolean\",\"description\":\"Always true.\"}"
"},\"required\":[\"name\",\"unexposed\"],\"additionalProperties\":false}" },
};

static cJSON *tools_arr;	/* tools/list, built from tool_defs */
static struct schema *tool_schemas[NELEM(tool_defs)];	/* each row's checks */
static struct schema *out_schemas[NELEM(tool_defs)];	/* each row's output */
/* tools_set_images replaces the TOOL_IMAGES rows of both while calls read
 * them: readers hold it shared, the swap exclusive. */
static pthread_rwlock_t tools_lk = PTHREAD_RWLOCK_INITIALIZER;
static cJSON *tools_images;	/* the names those rows show, or NULL */

static const struct tool_def *
tool_find(const char *name)
{
	size_t i;

	for (i = 0; i < NELEM(tool_defs); i++)
		if (strcmp(tool_defs[i].name, name) == 0)
			return &tool_defs[i];
	return NULL;
}

/*
 * A TOOL_IMAGES row's image names: an "enum" on its "image" property (in
 * the schema in), and a sentence ending its description (into desc).
 */
static void
tool_add_images(const struct tool_def *d, cJSON *in, const cJSON *images,
    struct buf *desc)
{
	cJSON *img = cJSON_GetObjectItemCaseSensitive(
	    cJSON_GetObjectItemCaseSensitive(in, "properties"), "image");
	const cJSON *n;

	ign(buf_addstr(desc, d->description));
	if (!(d->flags & TOOL_IMAGES) || cJSON_GetArraySize(images) == 0)
		return;
	if (img != NULL)
		cJSON_AddItemToObject(img, "enum", cJSON_Duplicate(images, 1));
	ign(buf_addstr(desc, " Images here:"));
	cJSON_ArrayForEach(n, images) {
		ign(buf_addf(desc, " %s%s", n->valuestring, n->next ? "," : "."));
	}
}

/* Row d as tools/list shows it (images: the runtime's image names, or
 * NULL), with its schemas compiled into *sc (input) and *oc (output). */
static cJSON *
tool_json(const struct tool_def *d, const cJSON *images, struct schema **sc,
    struct schema **oc, char *err, size_t errlen)
{
	cJSON *t = NULL, *in, *an = NULL, *out = NULL;
	struct buf desc;

	buf_init(&desc, 64 * 1024);
	if ((in = cJSON_Parse(d->schema)) == NULL ||
	    (an = cJSON_Parse(d->annotations)) == NULL || !cJSON_IsObject(an) ||
	    d->output == NULL || (out = cJSON_Parse(d->output)) == NULL) {
		snprintf(err, errlen, "its inputSchema, annotations or "
		    "outputSchema are missing or do not parse");
		goto out;
	}
	if (tool_find(d->name) != d) {
		snprintf(err, errlen, "the name is in the table twice");
		goto out;
	}
	tool_add_images(d, in, images, &desc);
	if ((*sc = schema_compile(in, err, errlen)) == NULL)
		goto out;
	if ((*oc = schema_compile(out, err, errlen)) == NULL)
		goto out;
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "name", d->name);
	cJSON_AddStringToObject(t, "title", d->title);
	cJSON_AddStringToObject(t, "description", desc.p ? desc.p : "");
	cJSON_AddItemToObject(t, "inputSchema", in);
	cJSON_AddItemToObject(t, "outputSchema", out);
	cJSON_AddItemToObject(t, "annotations", an);
	in = an = out = NULL;
out:
	cJSON_Delete(in);
	cJSON_Delete(an);
	cJSON_Delete(out);
	buf_free(&desc);
	return t;
}

int
tools_init(void)
{
	char err[256];
	size_t i;
	cJSON *t;

	if (tools_arr != NULL)
		return 0;
	tools_arr = cJSON_CreateArray();
	for (i = 0; i < NELEM(tool_defs); i++) {
		if ((t = tool_json(&tool_defs[i], NULL, &tool_schemas[i],
		    &out_schemas[i], err, sizeof(err))) == NULL) {
			log_warnx("tool=%s schema: %s", tool_defs[i].name, err);
			tools_cleanup();
			return -1;
		}
		cJSON_AddItemToArray(tools_arr, t);
	}
	return 0;
}

int
tools_set_images(const cJSON *images)
{
	struct schema *sc[NELEM(tool_defs)] = { NULL }, *old;
	struct schema *oc[NELEM(tool_defs)] = { NULL };
	cJSON *t[NELEM(tool_defs)] = { NULL };
	char err[256];
	size_t i;
	int same;

	if (images != NULL && (!cJSON_IsArray(images) ||
	    cJSON_GetArraySize(images) == 0))
		images = NULL;
	pthread_rwlock_rdlock(&tools_lk);
	same = (images == NULL && tools_images == NULL) || (images != NULL &&
	    tools_images != NULL && cJSON_Compare(images, tools_images, 1));
	pthread_rwlock_unlock(&tools_lk);
	if (same || tools_arr == NULL)
		return 0;
	/* the output schemas do not change with the images: out_schemas
	 * stays, oc is only what tool_json compiles again */
	for (i = 0; i < NELEM(tool_defs); i++)
		if ((tool_defs[i].flags & TOOL_IMAGES) && (t[i] = tool_json(
		    &tool_defs[i], images, &sc[i], &oc[i], err,
		    sizeof(err))) == NULL) {
			/* e.g. an enum too long to spell in its message */
			log_warnx("tool=%s images not shown: %s", tool_defs[i].name,
			    err);
			for (i = 0; i < NELEM(tool_defs); i++) {
				cJSON_Delete(t[i]);
				schema_free(sc[i]);
				schema_free(oc[i]);
			}
			return -1;
		}
	pthread_rwlock_wrlock(&tools_lk);
	for (i = 0; i < NELEM(tool_defs); i++) {
		if (t[i] == NULL)
			continue;
		cJSON_ReplaceItemInArray(tools_arr, (int)i, t[i]);
		old = tool_schemas[i];
		tool_schemas[i] = sc[i];
		sc[i] = old;	/* freed below, out of the lock */
	}
	cJSON_Delete(tools_images);
	tools_images = images != NULL ? cJSON_Duplicate(images, 1) : NULL;
	pthread_rwlock_unlock(&tools_lk);
	for (i = 0; i < NELEM(tool_defs); i++) {
		schema_free(sc[i]);
		schema_free(oc[i]);
	}
	return 0;
}

void
tools_cleanup(void)
{
	size_t i;

	for (i = 0; i < NELEM(tool_schemas); i++) {
		schema_free(tool_schemas[i]);
		tool_schemas[i] = NULL;
		schema_free(out_schemas[i]);
		out_schemas[i] = NULL;
	}
	cJSON_Delete(tools_arr);
	tools_arr = NULL;
	cJSON_Delete(tools_images);
	tools_images = NULL;
}

int
tools_exists(const char *name)
{
	return tool_find(name) != NULL;
}

cJSON *
tools_list(void)
{
	cJSON *a;

	pthread_rwlock_rdlock(&tools_lk);
	a = cJSON_Duplicate(tools_arr, 1);
	pthread_rwlock_unlock(&tools_lk);
	return a;
}

int
tools_check(const char *name, const cJSON *args, char *err, size_t errlen)
{
	const struct tool_def *d = tool_find(name);
	int rc;

	if (d == NULL) {
		snprintf(err, errlen, "unknown tool");
		return -1;
	}
	pthread_rwlock_rdlock(&tools_lk);
	ASSERT(tool_schemas[d - tool_defs] != NULL);	/* tools_init ran */
	rc = schema_check(tool_schemas[d - tool_defs], args, err, errlen);
	pthread_rwlock_unlock(&tools_lk);
	return rc;
}

void
tools_call_free(struct tool_call *tc)
{
	if (tc == NULL || atomic_fetch_sub(&tc->refs, 1) > 0)
		return;
	free(tc->name);
	free(tc->live);
	cJSON_Delete(tc->args);
	cJSON_Delete(tc->result);
	cJSON_Delete(tc->rpc_error);
	free(tc);
}

/*
 * A second check of an integer argument against a bound the server's
 * configuration sets (the schema holds only the fixed ceiling); same
 * message as the schema's. 0, or -1 with err.
 */
static int
conf_range(const char *k, long long v, long long min, long long max,
    char *err, size_t errlen)
{
	if (v < min || v > max) {
		snprintf(err, errlen, "argument '%s' must be between %lld and %lld",
		    k, min, max);
		return -1;
	}
	return 0;
}

/* ---- agent replies: areq.c ---- */

/*
 * Does tc's result carry what row d's outputSchema asks for? An error
 * result may leave structuredContent out; any other result of a
 * structured call (2025-06-18 and later) must hold it, matching. 0, or -1
 * with err.
 */
static int
output_check(const struct tool_def *d, const struct tool_call *tc, char *err,
    size_t errlen)
{
	const cJSON *st = cJSON_GetObjectItemCaseSensitive(tc->result,
	    "structuredContent");

	if (st == NULL) {
		if (!tc->structured || tc->is_error)
			return 0;
		snprintf(err, errlen, "no structuredContent");
		return -1;
	}
	return schema_check(out_schemas[d - tool_defs], st, err, errlen);
}

/* ---- tools ---- */

static void
t_shell(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct areq a = { .s = s, .tc = tc };
	struct buf out;
	const char *cmd = schema_str(args, "command");
	char err[256];
	long long tmo = schema_int(args, "timeout", -1);
	long long maxs = c->shell_max_timeout_ms / 1000;
	struct timespec busy_wait = { 0, 50 * 1000000 };
	struct live *live;
	cJSON *body;
	const char *code;
	char fp[33];
	int tries;

	(void)m;
	buf_init(&out, 64 * 1024);
	/* The server's limit is configuration, not in the schema. */
	if (tmo == -1)
		tmo = c->shell_timeout_ms / 1000;
	else if (conf_range("timeout", tmo, 1, maxs < 1 ? 1 : maxs, err,
	    sizeof(err)) == -1) {
		toolres_set_text(tc, err, 1);
		goto out;
	}
	if (atomic_load(&tc->cancelled)) {
		toolres_set_text(tc, "cancelled", 1);
		goto out;
	}
	/* A keyed re-issue gets its first run's result (tasks.h). */
	if (tc->idem_key[0] != '\0' && tasks_attach(tc, s, cmd, tmo, fp))
		goto out;
	/* A cancel interrupts the command (tools_cancel): let the agent
	 * answer then, and give up on it only if it does not. */
	tc->cancel.grace_ms = CANCEL_SHELL_GRACE_MS;
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", cmd);
	cJSON_AddNumberToObject(body, "timeout_ms", (double)(tmo * 1000));
	cJSON_AddNumberToObject(body, "max_output", (double)c->max_output);
	if (tc->task_id[0] != '\0')	/* may become a task: kept, detached */
		cJSON_AddStringToObject(body, "result_id", tc->task_id);
	if (tc->idem_key[0] != '\0')
		cJSON_AddStringToObject(body, "result_fp", fp);
	if (tc->trace[0] != '\0')	/* the agent logs it */
		cJSON_AddStringToObject(body, "traceparent", tc->trace);
	live = toollive_start(tc, s, c);
	for (tries = 0;; tries++) {
		if (areq_do(&a, "POST", "/v1/shell", body,
		    (int)(tmo * 1000) + MARGIN_MS) == -1) {
			toollive_stop(live);
			cJSON_Delete(body);
			toolres_set_text(tc, a.err, 1);
			goto out;
		}
		/* Busy right after a cancelled command was interrupted: it is
		 * winding down; wait for it rather than fail. */
		if (a.status != 409 || tries >= BUSY_RETRIES ||
		    !sess_interrupted_recently(s, CANCEL_SHELL_GRACE_MS) ||
		    atomic_load(&tc->cancelled))
			break;
		areq_free(&a);
		memset(&a, 0, sizeof(a));
		a.s = s;
		a.tc = tc;
		nanosleep(&busy_wait, NULL);
	}
	toollive_stop(live);
	cJSON_Delete(body);
	code = toolres_str(cJSON_GetObjectItemCaseSensitive(a.j, "error"), "code");
	if (a.status == 409 && tc->idem_key[0] != '\0' && code != NULL &&
	    strcmp(code, "result_exists") == 0) {
		/* another call with the key started it meanwhile */
		if (!tasks_attach(tc, s, cmd, tmo, fp))
			toolres_set_text(tc, "shell failed: the idempotency key's "
			    "command could not be found or started", 1);
		goto out;
	}
	if (a.status != 200) {
		areq_error_text(&a, "shell", &out);
		toolres_set_buf(tc, &out, 1);
		goto out;
	}
	toolres_shell(tc, a.j, tmo);
out:
	areq_free(&a);
	buf_free(&out);
}

static void
job_not_found(struct tool_call *tc, struct areq *a, const char *jid,
    const char *what)
{
	struct buf out;

	buf_init(&out, 64 * 1024);
	if (a->status == 404)
		ign(buf_addf(&out, "%s failed: no job '%s' in this session. Job ids "
		    "come from shell_async in the same session (X-Session-Id); a "
		    "sandbox re-created with create_sandbox or clear_session has no "
		    "old jobs.", what, jid));
	else
		areq_error_text(a, what, &out);
	toolres_set_buf(tc, &out, 1);
	buf_free(&out);
}


static void
t_shell_async(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct areq a = { .s = s, .tc = tc };
	struct buf out;
	cJSON *body;

	(void)m;
	(void)c;
	buf_init(&out, 64 * 1024);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "command", schema_str(args, "command"));
	if (areq_do(&a, "POST", "/v1/jobs", body, 30000) == -1) {
		cJSON_Delete(body);
		toolres_set_text(tc, a.err, 1);
		goto out;
	}
	cJSON_Delete(body);
	if (a.status != 200 && a.status != 201) {
		areq_error_text(&a, "shell_async", &out);
		toolres_set_buf(tc, &out, 1);
		goto out;
	}
	toolres_job_started(tc, a.j);
out:
	areq_free(&a);
	buf_free(&out);
}

/*
 * The job_id argument, or NULL with tc's result set. The schema's pattern
 * lets "." and ".." through, and in the agent's URLs they are paths.
 */
static const char *
job_id_arg(struct tool_call *tc, const cJSON *args)
{
	const char *jid = schema_str(args, "job_id");

	if (jid == NULL || !toolres_job_id_ok(jid)) {
		toolres_set_text(tc, "argument 'job_id' is not a job id (use the job_id "
		    "returned by shell_async)", 1);
		return NULL;
	}
	return jid;
}

/*
 * POSTs /v1/jobs/<jid>/<op> (wait: for up to wait_s seconds) into *w.
 * 0, or -1 with tc's result set.
 */
static int
job_post(struct tool_call *tc, struct areq *w, const char *jid,
    const char *op, long long wait_s, const char *what)
{
	char path[256];
	cJSON *body = cJSON_CreateObject();
	int rc = -1;

	if (strcmp(op, "wait") == 0)
		cJSON_AddNumberToObject(body, "timeout_ms", (double)(wait_s * 1000));
	snprintf(path, sizeof(path), "/v1/jobs/%s/%s", jid, op);
	if (areq_do(w, "POST", path, body, (int)(wait_s * 1000) + MARGIN_MS) == -1)
		toolres_set_text(tc, w->err, 1);
	else if (w->status != 200)
		job_not_found(tc, w, jid, what);
	else
		rc = 0;
	cJSON_Delete(body);
	return rc;
}

/*
 * Reads a job's output from off (at most max bytes) into tc's result:
 * for shell_wait after waiting wait_s seconds, for shell_poll (wait_s -1).
 */
static void
job_output(struct tool_call *tc, struct sess *s, const char *jid,
    long long off, long long max, long long wait_s)
{
	const char *what = wait_s >= 0 ? "shell_wait" : "shell_poll";
	struct areq a = { .s = s, .tc = tc };
	char path[256];

	snprintf(path, sizeof(path), "/v1/jobs/%s?offset=%lld&max=%lld", jid, off,
	    max);
	if (areq_do(&a, "GET", path, NULL, 30000) == -1)
		toolres_set_text(tc, a.err, 1);
	else if (a.status != 200)
		job_not_found(tc, &a, jid, what);
	else
		toolres_job_output(tc, a.j, jid, off, wait_s);
	areq_free(&a);
}

static void
t_shell_poll(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	const char *jid;

	(void)m;
	if ((jid = job_id_arg(tc, args)) != NULL)
		job_output(tc, s, jid, schema_int(args, "offset", 0),
		    schema_int(args, "max_bytes", c->max_output), -1);
}

static void
t_shell_wait(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct areq w = { .s = s };
	long long maxs = c->shell_max_timeout_ms / 1000;
	long long tmo = schema_int(args, "timeout", -1);
	const char *jid;
	char err[256];

	(void)m;
	/* The server's limit is configuration, not in the schema. */
	if (tmo == -1)
		tmo = 30 < maxs ? 30 : maxs;
	else if (conf_range("timeout", tmo, 0, maxs, err, sizeof(err)) == -1) {
		toolres_set_text(tc, err, 1);
		return;
	}
	if ((jid = job_id_arg(tc, args)) != NULL &&
	    job_post(tc, &w, jid, "wait", tmo, "shell_wait") == 0)
		job_output(tc, s, jid, schema_int(args, "offset", 0), c->max_output,
		    tmo);
	areq_free(&w);
}

static void
t_shell_stop(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct areq w = { .s = s };
	long long maxs = c->shell_max_timeout_ms / 1000;
	const char *jid;

	(void)m;
	if ((jid = job_id_arg(tc, args)) != NULL &&
	    job_post(tc, &w, jid, "stop", 30 < maxs ? 30 : maxs, "shell_stop") == 0)
		toolres_job_stop(tc, w.j, jid);
	areq_free(&w);
}

static void
sess_error(struct tool_call *tc, enum sess_err e, const char *err)
{
	struct buf out;

	buf_init(&out, 4096);
	switch (e) {
	case SE_LIMIT:
	case SE_DRAINING:
	case SE_BUSY:
		ign(buf_addstr(&out, err));
		break;
	default:
		ign(buf_addf(&out, "%s", err));
	}
	toolres_set_buf(tc, &out, 1);
	buf_free(&out);
}

/* The agent refused an edit because the file is binary (its 422 with
 * the code binary_file; an agent before that code said edit_failed, and
 * its own text then goes out as it is). */
static int
binary_refused(struct areq *a)
{
	const char *code = toolres_str(cJSON_GetObjectItemCaseSensitive(a->j,
	    "error"), "code");

	return a->status == 422 && code != NULL &&
	    strcmp(code, "binary_file") == 0;
}

static void
t_edit(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct areq a = { .s = s, .tc = tc };
	struct buf out;
	const char *cmd = schema_str(args, "command");
	const char *path = schema_str(args, "path");
	const char *ft = schema_str(args, "file_text");
	const char *os = schema_str(args, "old_str");
	const char *ns = schema_str(args, "new_str");
	const char *it = schema_str(args, "insert_text"), *p;
	long long line = schema_int(args, "insert_line", -1), x0, x1;
	cJSON *body = NULL, *vr;

	(void)m;
	(void)c;
	buf_init(&out, 64 * 1024);
	body = cJSON_CreateObject();
	cJSON_AddStringToObject(body, "path", path);
	if (strcmp(cmd, "view") == 0) {
		vr = cJSON_GetObjectItemCaseSensitive(args, "view_range");
		if (cJSON_IsArray(vr)) {	/* the schema: two integers */
			x0 = schema_int_item(args, "view_range", 0, 0);
			x1 = schema_int_item(args, "view_range", 1, 0);
			if (x0 < 1 || (x1 != -1 && x1 < x0)) {
				toolres_set_text(tc, "argument 'view_range': first_line must be >= 1 "
				    "and last_line >= first_line, or -1 for the end", 1);
				goto out;
			}
			cJSON_AddItemToObject(body, "view_range", cJSON_Duplicate(vr, 1));
		}
		p = "/v1/files/view";
	} else if (strcmp(cmd, "create") == 0) {
		if (ft == NULL) {
			toolres_set_text(tc, "create needs 'file_text' (the whole file content)", 1);
			goto out;
		}
		cJSON_AddStringToObject(body, "file_text", ft);
		p = "/v1/files/create";
	} else if (strcmp(cmd, "str_replace") == 0) {
		if (os == NULL || *os == '\0') {
			toolres_set_text(tc, "str_replace needs a non-empty 'old_str' (the exact "
			    "text to replace) and 'new_str'", 1);
			goto out;
		}
		cJSON_AddStringToObject(body, "old_str", os);
		cJSON_AddStringToObject(body, "new_str", ns ? ns : "");
		p = "/v1/files/str_replace";
	} else if (strcmp(cmd, "insert") == 0) {
		if (it == NULL)
			it = ns;	/* some clients send new_str for insert */
		if (line < 0 || it == NULL) {
			toolres_set_text(tc, "insert needs 'insert_line' (0 = top) and "
			    "'insert_text'", 1);
			goto out;
		}
		cJSON_AddNumberToObject(body, "insert_line", (double)line);
		cJSON_AddStringToObject(body, "insert_text", it);
		p = "/v1/files/insert";
	} else {
		toolres_set_text(tc, "unknown command", 1);	/* the schema's enum has four */
		goto out;
	}
	if (areq_do(&a, "POST", p, body, 60000) == -1) {
		toolres_set_text(tc, a.err, 1);
		goto out;
	}
	if (a.status != 200) {
		if (binary_refused(&a))
			/* the agent names its own raw route, which no client
			 * reaches: point at the tools and the REST route */
			ign(buf_addf(&out, "%s failed: %s looks binary (NUL bytes "
			    "or invalid UTF-8), and this tool works on text. %s "
			    "it with %s and encoding \"base64\" (bytes exact), "
			    "or over REST: %s /v1/sessions/{id}/files/<path>.", cmd,
			    path, strcmp(cmd, "view") == 0 ? "Read" : "Write",
			    strcmp(cmd, "view") == 0 ? "read_file" : "write_file",
			    strcmp(cmd, "view") == 0 ? "GET" : "PUT"));
		else
			areq_error_text(&a, cmd, &out);
		toolres_set_buf(tc, &out, 1);
		goto out;
	}
	toolres_edit(tc, cmd, path, ft, line, a.j);
out:
	cJSON_Delete(body);
	areq_free(&a);
	buf_free(&out);
}

static void
t_create_sandbox(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	struct sess_opts o;
	enum sess_err e = SE_OK;
	struct buf out;
	char err[1024];
	cJSON *st;

	(void)m;
	(void)c;	/* the maxima: sess_reprovision checks them */
	sessopt_init(&o);
	if (sessopt_parse(args, NULL, &o, err, sizeof(err)) == -1) {
		snprintf(err + strlen(err), sizeof(err) - strlen(err), ". Your "
		    "sandbox and its /workspace are unchanged.");
		toolres_set_text(tc, err, 1);
		return;
	}
	if (sess_reprovision(s, &o, &tc->starting, &e, err, sizeof(err)) == -1) {
		sess_error(tc, e, err);
		return;
	}
	st = sess_json(s);
	buf_init(&out, 4096);
	ign(buf_addf(&out, "A new sandbox is ready (id %s, image %s). Its "
	    "/workspace %s. Limits: ", sess_sandbox_id(s), toolres_str(st, "image"),
	    o.fresh_workspace ? "is empty" : "holds a copy of the old one's files"));
	toolres_limits_text(st, &out);
	ign(buf_addstr(&out, "."));
	toolres_sandbox(tc, &out, sess_sandbox_id(s), toolres_str(st, "image"));
	cJSON_Delete(st);
	buf_free(&out);
}

static void
t_sandbox_status(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	(void)m;
	(void)c;
	(void)args;
	toolres_status(tc, sess_status(s));
}

static void
t_clear_session(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	enum sess_err e = SE_OK;
	char err[512];
	int rc;

	(void)s;
	(void)c;
	(void)args;
	if ((rc = sess_delete(m, tc->sid, "clear_session", &e, err,
	    sizeof(err))) == -1 && e != SE_NOTFOUND) {
		sess_error(tc, e, err);
		return;
	}
	toolres_cleared(tc, rc == 0);
}

static void
t_expose_port(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	enum sess_err e = SE_OK;
	char err[512], note[256];
	cJSON *app;

	(void)m;
	(void)c;
	app = apps_expose(s, (int)schema_int(args, "port", 0),
	    schema_str(args, "name"), &e, err, sizeof(err), note, sizeof(note));
	if (app == NULL) {
		sess_error(tc, e, err);
		return;
	}
	toolres_app(tc, app, note);
}

static void
t_list_apps(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	(void)m;
	(void)c;
	(void)args;
	toolres_apps_list(tc, apps_list(s));
}

static void
t_unexpose_port(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const cJSON *args)
{
	enum sess_err e = SE_OK;
	const char *name = schema_str(args, "name");
	char err[512];

	(void)m;
	(void)c;
	if (sess_hold(s, LIFECYCLE_HOLD_MS) == -1) {
		sess_error(tc, SE_BUSY, "the sandbox is being changed (created, "
		    "stopped or replaced): retry in a moment");
		return;
	}
	if (apps_unexpose(s, name, &e, err, sizeof(err)) == -1) {
		sess_release(s);
		sess_error(tc, e, err);
		return;
	}
	sess_release(s);
	toolres_unexposed(tc, name);
}

/*
 * Checks the arguments (before anything touches the session: a call the
 * schema refuses costs no sandbox), meets the session as the row's flags
 * say, then runs the row's handler.
 */
/*
 * The handler's agent requests (areq.c) carry tc's context: they give up
 * as soon as the call is cancelled, and mark tc->lost when they found the
 * sandbox stopped. Outside a handler (the sandbox's set-up) nothing is
 * cancelled: it must complete.
 */
static void
call_begin(struct tool_call *tc)
{
	tc->cancel.flag = &tc->cancelled;
	tc->cancel.grace_ms = 0;
	tc->lost = 0;
}

static void
call_end(struct tool_call *tc)
{
	tc->cancel.flag = NULL;
}

/*
 * The sandbox had stopped before the call's request reached its agent (it
 * died, was OOM-killed or killed from outside): starts it again with its
 * workspace (sess_enter) and runs the tool once more, its text saying so.
 * A second loss is answered as it is.
 */
/* The tool's handler on entered session s, with the call's context: its
 * cancel, and its trace context at the egress proxy while it runs. */
static void
run_handler(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const struct tool_def *d)
{
	call_begin(tc);
	if (tc->trace[0] != '\0')	/* the proxy's audit lines name the call */
		sess_trace(s, tc->trace);
	d->handler(tc, m, s, c, tc->args);
	if (tc->trace[0] != '\0')
		sess_trace(s, NULL);
	call_end(tc);
}

static void
rerun_lost(struct tool_call *tc, struct sessmgr *m, struct sess *s,
    const struct conf *c, const struct tool_def *d)
{
	char err[512], why[256];
	enum sess_err e = SE_OK;
	cJSON *ct, *t0, *t;

	snprintf(why, sizeof(why), "%s", tc->lost_why);
	log_warnx("session=%s tool=%s sandbox had stopped (%s): starting it "
	    "again and retrying", tc->sid, tc->name, why);
	if (sess_enter(s, &tc->starting, &e, err, sizeof(err)) == -1)
		return;		/* the first answer stands */
	run_handler(tc, m, s, c, d);
	sess_leave(s);
	if (tc->lost || tc->result == NULL ||
	    !cJSON_IsArray(ct = cJSON_GetObjectItemCaseSensitive(tc->result,
	    "content")))
		return;
	t = cJSON_CreateObject();
	cJSON_AddStringToObject(t, "type", "text");
	snprintf(err, sizeof(err), "[The sandbox had stopped (%s). It was "
	    "started again with /workspace as it was; the shell is a fresh one "
	    "(variables and directory reset) and background jobs from before "
	    "are gone. The call above ran in the restarted sandbox.]", why);
	cJSON_AddStringToObject(t, "text", err);
	t0 = cJSON_DetachItemFromArray(ct, 0);
	cJSON_AddItemToArray(ct, t0 != NULL ? t0 : cJSON_CreateString(""));
	cJSON_AddItemToArray(ct, t);
}

static void
tools_run1(struct sessmgr *m, const struct conf *c, struct tool_call *tc)
{
	const struct tool_def *d = tool_find(tc->name);
	struct sess *s;
	enum sess_err e = SE_OK;
	char err[512];

	if (tc->args == NULL)
		tc->args = cJSON_CreateObject();
	if (tools_check(tc->name, tc->args, err, sizeof(err)) == -1) {
		if (d->flags & TOOL_UNCHANGED)
			snprintf(err + strlen(err), sizeof(err) - strlen(err), ". "
			    "Your sandbox and its /workspace are unchanged.");
		toolres_set_text(tc, err, 1);
		return;
	}
	if (d->flags & TOOL_NO_SANDBOX) {
		/* No sandbox is met, but the session's identity holds. */
		if ((s = sess_get(m, tc->sid, tc->org, tc->user, 0, &e, err,
		    sizeof(err))) != NULL)
			sess_put(s);
		else if (e == SE_IDENTITY) {
			sess_error(tc, e, err);
			return;
		}
		d->handler(tc, m, NULL, c, tc->args);
		return;
	}
	if ((s = sess_get(m, tc->sid, tc->org, tc->user, 1, &e, err, sizeof(err))) == NULL) {
		sess_error(tc, e, err);
		return;
	}
	if (d->flags & TOOL_NO_ENTER) {
		d->handler(tc, m, s, c, tc->args);
		goto out;
	}
	if (sess_enter(s, &tc->starting, &e, err, sizeof(err)) == -1) {
		sess_error(tc, e, err);
		goto out;
	}
	toollive_set(tc, NULL);	/* the sandbox is up: no start note */
	/* The tool's own waits on the agent give up as soon as the call is
	 * cancelled (not the sandbox's set-up above: it must complete). */
	run_handler(tc, m, s, c, d);
	sess_leave(s);
	if (tc->lost)
		rerun_lost(tc, m, s, c, d);
out:
	sess_put(s);
}

/*
 * A result that does not match its tool's outputSchema is a bug here (or
 * an agent reply a builder let through): the client would reject it, so
 * it goes out as a tool error, with the text kept.
 */
static void
output_guard(struct tool_call *tc)
{
	const struct tool_def *d = tool_find(tc->name);
	char err[256];
	cJSON *c;

	if (d == NULL || tc->result == NULL ||
	    output_check(d, tc, err, sizeof(err)) == 0)
		return;
	log_warnx("session=%s tool=%s result does not match its outputSchema: %s",
	    tc->sid, tc->name, err);
	cJSON_DeleteItemFromObjectCaseSensitive(tc->result, "structuredContent");
	cJSON_DeleteItemFromObjectCaseSensitive(tc->result, "isError");
	cJSON_AddTrueToObject(tc->result, "isError");
	tc->is_error = 1;
	if (cJSON_IsArray(c = cJSON_GetObjectItemCaseSensitive(tc->result,
	    "content"))) {
		cJSON *t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "type", "text");
		cJSON_AddStringToObject(t, "text", "\n[internal error: the "
		    "orchestrator could not build this tool's structured result; the "
		    "text above is what it got]");
		cJSON_AddItemToArray(c, t);
	}
}

void
tools_run(struct sessmgr *m, const struct conf *c, struct tool_call *tc)
{
	tc->starting.fn = tc->progress ? toollive_start_note : NULL;
	tc->starting.arg = tc;
	tools_run1(m, c, tc);
	output_guard(tc);
	atomic_store(&tc->finished, 1);
}

void
tools_cancel(struct sessmgr *m, struct tool_call *tc)
{
	const struct tool_def *d = tool_find(tc->name);
	struct timespec ts = { 0, 100 * 1000000 };
	int i;

	if (d == NULL || (d->flags & TOOL_INTERRUPT) == 0)
		return;
	/*
	 * The call may not have reached the shell yet (the shell is idle):
	 * look again until it has, or the call ended.
	 */
	for (i = 0; i < CANCEL_RECHECK && !atomic_load(&tc->finished); i++) {
		if (sess_interrupt(m, tc->sid) == 1)
			return;
		nanosleep(&ts, NULL);
	}
}
