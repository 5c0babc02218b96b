/**
 * Environment variables that change which code a process runs (rather than
 * what data it works on): a shell's start-up file, the dynamic loader, an
 * interpreter's module path or start-up hook, a program a tool runs on its
 * own (a pager, an editor, git's ssh). The one list (docs/SECURITY.md, "What
 * the environment may change"): under an exec `allow` list each is refused
 * unless that scope names it in `allowEnv`, since `ls` with `BASH_ENV` or
 * `LD_PRELOAD` set is no longer the `ls` the list allowed.
 *
 * Not in the list, decided: `MALLOC_*` only tune the allocator
 * (`MALLOC_ARENA_MAX`, `MALLOC_CHECK_`) and choose no code; `TMPDIR`,
 * `LANG`/`LC_*`, `TZ` and `TERM` choose data. In, decided: `GLIBC_TUNABLES`
 * (a parser with a history of exploitable bugs), `LOCPATH`/`NLSPATH`/
 * `GCONV_PATH` (they load modules or format strings), `HOME` (a login bash
 * runs `$HOME/.bash_profile`).
 */
const EXACT = new Set([
  // shells: start-up files, hooks, word splitting, options, prompts (expanded, so they run $(…))
  'BASH_ENV', 'ENV', 'ZDOTDIR', 'HOME', 'SHELLOPTS', 'BASHOPTS', 'IFS', 'PS0', 'PS1', 'PS2', 'PS3', 'PS4', 'PROMPT_COMMAND',
  'BASH_LOADABLES_PATH', 'INPUTRC',
  // which file a name runs
  'PATH',
  // libc: loader, character-set converters, locale and message catalogues, tunables
  'GCONV_PATH', 'LOCPATH', 'NLSPATH', 'GLIBC_TUNABLES',
  // interpreters
  'PYTHONSTARTUP', 'PYTHONPATH', 'PYTHONHOME', 'PYTHONUSERBASE', 'PYTHONBREAKPOINT', 'PYTHONINSPECT',
  'NODE_OPTIONS', 'NODE_PATH',
  'PERL5OPT', 'PERL5LIB', 'PERLLIB', 'PERL5DB',
  'RUBYOPT', 'RUBYLIB',
  'LUA_INIT', 'LUA_PATH', 'LUA_CPATH', 'PHPRC', 'PHP_INI_SCAN_DIR', 'TCLLIBPATH',
  'JAVA_TOOL_OPTIONS', '_JAVA_OPTIONS', 'JDK_JAVA_OPTIONS', 'CLASSPATH', 'DOTNET_STARTUP_HOOKS',
  // programs other programs start
  'PAGER', 'MANPAGER', 'LESSOPEN', 'LESSCLOSE', 'EDITOR', 'VISUAL', 'SSH_ASKPASS', 'SUDO_ASKPASS',
  'OPENSSL_CONF', 'OPENSSL_ENGINES', 'XDG_CONFIG_HOME',
]);

/** Every variable with these prefixes: the loader's (`LD_PRELOAD`, `LD_AUDIT`, `LD_LIBRARY_PATH`, …), bash's exported functions, and git's (many run programs: `GIT_SSH_COMMAND`, `GIT_EXEC_PATH`, `GIT_CONFIG_*`, `GIT_DIR`'s hooks). */
const PREFIXES = ['LD_', 'BASH_FUNC_', 'GIT_'];

/**
 * Whether setting `name` (to `value`) can change which code runs. A name
 * that is not a plain identifier counts (`BASH_FUNC_f%%`, the older `f()`
 * form); so does a value that bash would import as a function (`() {…`).
 */
export function codeChangingVar(name: string, value = ''): boolean {
  if (EXACT.has(name) || PREFIXES.some((p) => name.startsWith(p))) return true;
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return true;
  return /^\(\)\s*\{/.test(value);
}
