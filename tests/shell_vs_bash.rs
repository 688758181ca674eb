//! Runs each script in forkbox's shell (over the real session filesystem: a `Vfs` on an
//! overlay fork of an empty base, with the mount table) and in real `/bin/bash` (in a
//! fresh temporary directory), and compares stdout, stderr, status and the files each
//! left behind (names, kinds, permission bits, contents, symlink targets).
//!
//! stderr is compared after normalising the program prefix: bash's `bash: line N: ` and
//! `bash: -c: line N: ` become `forkbox: `. Cases marked `Loose` compare status and stdout
//! and only whether stderr is empty (their wording is known to differ, e.g. syntax errors).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests and benchmarks fail loudly on a broken assumption"
)]

use std::sync::Arc;

use forkbox::registry::Registry;
use forkbox::shell::{Shell, ShellConfig, Stdio};
use forkbox_commands::{Input, pipe};
use tokio_util::sync::CancellationToken;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// stdout, stderr (normalised) and status must match.
    Full,
    /// stdout and status must match; stderr only in being empty or not.
    Loose,
}
use Mode::{Full, Loose};

/// The working directory both shells run in (bash's temp dir is shown as this).
const WORK: &str = "/w";

const CASES: &[(&str, Mode, &str)] = &[
    // --- one resolver: builtins, commands, paths, launchers
    (
        "echo_escapes",
        Full,
        r#"echo -e 'a\0101\x41' "b\'c" 'd\e[0m'; echo -e 'x\cy'; echo; echo -E 'a\tb'"#,
    ),
    (
        "echo_launched",
        Full,
        r"env echo -e 'a\tb'; echo x y | xargs echo z; /bin/echo -n q; /usr/bin/echo w",
    ),
    (
        "true_false_launched",
        Full,
        "env true; echo $?; env false; echo $?; xargs true < /dev/null; echo $?",
    ),
    (
        "type_kinds",
        Full,
        "type echo cat cd sh; type -t echo cat cd while; echo $?",
    ),
    (
        "command_v_resolver",
        Full,
        "command -v echo ls cd; command -v nope; echo $?; command echo via-command",
    ),
    (
        "which_files",
        Full,
        "which echo ls true; echo $?; which cd; echo $?; which /usr/bin/ls",
    ),
    // --- set options: real, or fixed at the value forkbox has
    (
        "set_allexport",
        Full,
        "set -a; x=1; bash -c 'echo [$x]'; set +a; y=2; bash -c 'echo [$y]'",
    ),
    (
        "set_noexec",
        Full,
        "echo before; set -n; echo never; touch f; ls f",
    ),
    (
        "set_fixed_values",
        Full,
        "set +H; set -B; set -h; set +h; set +o posix; set -o emacs; echo ok",
    ),
    (
        "set_o_listing",
        Full,
        "set -o | grep -E '^(allexport|errexit|noglob|pipefail|xtrace|braceexpand|histexpand|hashall)'",
    ),
    (
        "bash_long_options",
        Full,
        "bash --norc --noprofile -c 'echo nested $0' zero; bash --login -c 'echo l'",
    ),
    // --- devices of the mount table
    (
        "dev_null_read",
        Full,
        "cat /dev/null; echo $?; wc -c < /dev/null",
    ),
    (
        "dev_zero",
        Full,
        "head -c 5 /dev/zero | wc -c; head -c 3 < /dev/zero | tr '\\0' z",
    ),
    ("dev_urandom", Full, "head -c 16 /dev/urandom | wc -c"),
    (
        "dev_char_tests",
        Full,
        "[[ -c /dev/null ]] && echo c; test -c /dev/zero && echo z; [ -c /w ] || echo notc; [[ -e /dev/stdin ]] && echo e",
    ),
    (
        "dev_stdin_operand",
        Full,
        "echo hi | cat /dev/stdin; echo there | head -n 1 /dev/stdin",
    ),
    // --- pattern removal and substitution (linear-time search)
    (
        "pattern_ops",
        Full,
        r#"x=/a/b.c/d.tar.gz; echo ${x##*/} ${x#*/} ${x%.*} ${x%%.*} ${x//[.\/]/_} ${x/b*./X}"#,
    ),
    (
        "pattern_ops_classes",
        Full,
        r#"x='a1b22c333'; echo ${x//[[:digit:]]/} ${x//[!0-9]/-} ${x#*[0-9]} ${x%%[0-9]*} ${x/#a/A} ${x/%3/E}"#,
    ),
    (
        "pattern_ops_unicode",
        Full,
        r#"x='héllo wörld'; echo ${x//ö/o} ${x%w*} ${x#*l}"#,
    ),
    // --- simple commands and quoting
    ("echo", Full, "echo hello world"),
    ("echo_n", Full, "echo -n a; echo b"),
    ("echo_e", Full, r"echo -e 'a\tb\nc'"),
    ("single_quotes", Full, "echo 'a  b   $x'"),
    ("double_quotes", Full, r#"x=1; echo "a  b $x \$x \" \\""#),
    ("ansi_c", Full, r"echo $'a\tb\x41\n'end"),
    ("backslash", Full, r"echo a\ b \$x c\\d"),
    ("mixed_quotes", Full, r#"echo 'a'"b"c'd'"#),
    ("empty_args", Full, r#"set -- "" a ""; echo $#"#),
    ("comment", Full, "echo a # not this\n# nor this\necho b"),
    ("line_continuation", Full, "echo a \\\n b"),
    // --- variables
    ("assign", Full, "x=5; echo $x ${x}"),
    ("assign_concat", Full, "x=a; x=${x}b; x+=c; echo $x"),
    ("prefix_env_only", Full, "x=outer; x=inner true; echo $x"),
    ("unset", Full, "x=1; unset x; echo \"[${x-unset}]\""),
    ("export_env", Full, "export A=1; bash -c 'echo $A'"),
    ("nonexported_hidden", Full, "B=2; bash -c 'echo [$B]'"),
    (
        "prefix_env_to_child",
        Full,
        "C=3 bash -c 'echo $C'; echo [$C]",
    ),
    ("special_count", Full, "set -- a b c; echo $# $1 $3"),
    (
        "special_at_quoted",
        Full,
        r#"set -- "a b" c; for x in "$@"; do echo "[$x]"; done"#,
    ),
    (
        "special_star_quoted",
        Full,
        r#"set -- "a b" c; for x in "$*"; do echo "[$x]"; done"#,
    ),
    (
        "special_at_unquoted",
        Full,
        r#"set -- "a b" c; for x in $@; do echo "[$x]"; done"#,
    ),
    (
        "at_empty",
        Full,
        r#"set --; for x in "$@"; do echo "[$x]"; done; echo done"#,
    ),
    (
        "positional_10",
        Full,
        "set -- 1 2 3 4 5 6 7 8 9 10 11; echo ${10} ${11} $10",
    ),
    ("dollar_zero", Full, "f() { echo $#; }; f a b"),
    ("status_var", Full, "false; echo $?; true; echo $?"),
    (
        "pid_stable",
        Full,
        "a=$$; b=$$; [[ $a == $b ]] && echo same",
    ),
    (
        "random_range",
        Full,
        "r=$RANDOM; (( r >= 0 && r < 32768 )) && echo ok",
    ),
    (
        "shift",
        Full,
        "set -- a b c; shift; echo $@; shift 2; echo $#",
    ),
    (
        "local",
        Full,
        "x=g; f() { local x=l; echo $x; }; f; echo $x",
    ),
    (
        "local_dynamic",
        Full,
        "f() { local v=1; g; }; g() { echo $v; }; f; echo [$v]",
    ),
    ("readonly", Loose, "readonly r=1; r=2; echo after"),
    (
        "ifs_custom",
        Full,
        "IFS=:; x=a:b:c; for i in $x; do echo $i; done",
    ),
    (
        "ifs_empty_fields",
        Full,
        r#"IFS=:; x="a::b"; set -- $x; echo $#"#,
    ),
    (
        "word_split",
        Full,
        r#"x="a   b  c"; set -- $x; echo $#; set -- "$x"; echo $#"#,
    ),
    (
        "array_basic",
        Full,
        "a=(x y z); echo ${a[1]} ${#a[@]} ${a[@]}",
    ),
    (
        "array_append",
        Full,
        "a=(1); a+=(2 3); a[5]=6; echo ${a[@]} ${!a[@]}",
    ),
    // --- parameter expansion
    (
        "param_default",
        Full,
        "echo ${u:-def} ${u-d2}; e=; echo [${e:-x}] [${e-x}]",
    ),
    ("param_assign", Full, "echo ${u:=set}; echo $u"),
    ("param_alt", Full, "x=1; echo [${x:+alt}] [${u:+alt}]"),
    ("param_error", Loose, "echo ${u:?missing}; echo after"),
    ("param_length", Full, "x=hello; echo ${#x}"),
    (
        "param_prefix",
        Full,
        "p=/a/b/c.tar.gz; echo ${p#*/} ${p##*/}",
    ),
    (
        "param_suffix",
        Full,
        "p=/a/b/c.tar.gz; echo ${p%.*} ${p%%.*}",
    ),
    (
        "param_replace",
        Full,
        "x=foofoo; echo ${x/o/0} ${x//o/0} ${x/#f/F} ${x/%o/O}",
    ),
    (
        "param_substring",
        Full,
        "x=abcdef; echo ${x:2} ${x:1:3} ${x: -2} ${x:1:-1}",
    ),
    (
        "param_case",
        Full,
        "x=hello; y=WORLD; echo ${x^^} ${y,,} ${x^}",
    ),
    ("param_indirect", Full, "x=y; y=val; echo ${!x}"),
    ("param_quoted_pattern", Full, r#"x='a*b'; echo ${x#"a*"}"#),
    ("param_nested", Full, "x=; y=2; echo ${x:-${y:-3}}"),
    // --- tilde
    ("tilde_home", Full, r#"[[ ~ == "$HOME" ]] && echo yes"#),
    ("tilde_quoted", Full, "echo '~' \"~\""),
    // --- command substitution
    ("cmdsub", Full, "x=$(echo hi); echo \"[$x]\""),
    ("cmdsub_backtick", Full, "echo `echo a` b"),
    (
        "cmdsub_trailing_newlines",
        Full,
        "x=$(printf 'a\\n\\n\\n'); echo \"[$x]\"",
    ),
    ("cmdsub_nested", Full, "echo $(echo $(echo deep))"),
    ("cmdsub_status", Full, "x=$(false); echo $?"),
    ("cmdsub_no_leak", Full, "x=1; y=$(x=2; echo $x); echo $x $y"),
    ("cmdsub_split", Full, "set -- $(echo a b c); echo $#"),
    // --- arithmetic
    (
        "arith_basic",
        Full,
        "echo $((1 + 2 * 3)) $(( (1+2)*3 )) $((7/2)) $((-7%3))",
    ),
    ("arith_vars", Full, "x=5; echo $((x * 2)) $(($x + 1))"),
    (
        "arith_assign_ops",
        Full,
        "x=1; ((x += 4)); ((x *= 2)); ((x++)); echo $x",
    ),
    ("arith_ternary", Full, "x=3; echo $(( x > 2 ? 10 : 20 ))"),
    (
        "arith_bases",
        Full,
        "echo $((16#ff)) $((0x10)) $((010)) $((2#101))",
    ),
    (
        "arith_compare",
        Full,
        "echo $((1 < 2)) $((2 <= 1)) $((3 == 3)) $((1 != 1)) $((1 && 0)) $((0 || 2))",
    ),
    (
        "arith_bits",
        Full,
        "echo $((5 & 3)) $((5 | 3)) $((5 ^ 3)) $((1 << 4)) $((~0))",
    ),
    ("arith_div_zero", Loose, "echo $((1/0)); echo after"),
    ("arith_cmd_div_zero", Loose, "((1/0)); echo status $?"),
    ("arith_cmd_status", Full, "((0)); echo $?; ((5)); echo $?"),
    ("arith_power", Full, "echo $((2**10))"),
    ("let", Full, "let x=2+3 y=x*2; echo $x $y"),
    // --- globbing
    (
        "glob_star",
        Full,
        "touch_() { for f; do : > $f; done; }; touch_ a.txt b.txt c.log; echo *.txt",
    ),
    ("glob_question", Full, ": > a1; : > a2; : > b1; echo a?"),
    (
        "glob_bracket",
        Full,
        ": > x1; : > x2; : > x3; echo x[12] x[!1]",
    ),
    ("glob_nomatch", Full, "echo *.nothing"),
    ("glob_hidden", Full, ": > .hid; : > vis; echo *; echo .h*"),
    ("glob_quoted", Full, ": > a.txt; echo '*.txt' \"*\".txt"),
    ("glob_dir", Full, "mkdir_() { :; }; : > f1; echo f*"),
    // --- brace expansion
    ("brace_list", Full, "echo a{b,c,d}e"),
    ("brace_seq", Full, "echo {1..5} {a..c} {5..1..2}"),
    // --- pipelines
    ("pipe_basic", Full, "echo hello | cat"),
    (
        "pipe_three",
        Full,
        "printf 'b\\na\\nc\\n' | sort | head -n 2",
    ),
    (
        "pipe_status",
        Full,
        "true | false; echo $?; false | true; echo $?",
    ),
    ("pipe_negate", Full, "! false; echo $?; ! true; echo $?"),
    ("pipefail", Full, "set -o pipefail; false | true; echo $?"),
    (
        "pipestatus",
        Full,
        "true | false | true; echo ${PIPESTATUS[@]}",
    ),
    ("pipe_subshell_state", Full, "x=1; echo 2 | read x; echo $x"),
    (
        "pipe_read_loop",
        Full,
        "printf 'a\\nb\\n' | while read l; do echo \"<$l>\"; done",
    ),
    ("yes_head", Full, "yes | head -n 3"),
    (
        "pipe_stderr",
        Full,
        "{ echo out; echo err >&2; } 2>&1 | cat",
    ),
    // --- lists
    (
        "and_or",
        Full,
        "true && echo a; false && echo b; false || echo c; true || echo d",
    ),
    ("and_or_chain", Full, "false && echo x || echo y"),
    ("semicolons", Full, "echo a; echo b; echo c"),
    ("background", Full, "echo bg & wait; echo fg"),
    // --- subshells and groups
    ("subshell_isolation", Full, "x=1; (x=2; echo $x); echo $x"),
    (
        "subshell_cd",
        Full,
        "mkdir d 2>/dev/null; (cd d 2>/dev/null; echo in); echo out",
    ),
    ("brace_group", Full, "{ echo a; echo b; } > f; cat f"),
    ("subshell_exit", Full, "(exit 3); echo $?"),
    ("group_status", Full, "{ false; }; echo $?"),
    // --- redirections
    ("redir_write_cat", Full, "echo hi > f; cat f"),
    ("redir_append", Full, "echo a > f; echo b >> f; cat f"),
    ("redir_truncate", Full, "echo long > f; echo s > f; cat f"),
    ("redir_input", Full, "echo data > f; cat < f"),
    (
        "redir_stderr_file",
        Full,
        "{ echo o; echo e >&2; } 2> err; echo ---; cat err",
    ),
    (
        "redir_2to1",
        Full,
        "{ echo o; echo e >&2; } > all 2>&1; cat all",
    ),
    (
        "redir_order",
        Full,
        "{ echo e >&2; } 2>&1 > f; echo [$(cat f)]",
    ),
    ("redir_amp", Full, "{ echo o; echo e >&2; } &> f; cat f"),
    (
        "redir_amp_append",
        Full,
        "echo 1 > f; { echo 2; } &>> f; cat f",
    ),
    (
        "redir_devnull",
        Full,
        "echo gone > /dev/null; echo e 2>/dev/null >&2; echo kept",
    ),
    ("redir_clobber", Full, "echo a > f; echo b >| f; cat f"),
    (
        "redir_read_write",
        Full,
        "printf 'hello world\\n' > f; echo HI 1<> f; cat f; echo x 1<> new; cat new; \
         cat 0<> f; cat <> missing; wc -c < missing",
    ),
    (
        "redir_noclobber",
        Loose,
        "echo a > f; set -C; echo b > f; echo $?; cat f",
    ),
    ("redir_missing_input", Loose, "cat < nofile; echo $?"),
    (
        "redir_compound",
        Full,
        "for i in 1 2; do echo $i; done > f; cat f",
    ),
    (
        "redir_while_input",
        Full,
        "printf 'x\\ny\\n' > f; while read l; do echo \"[$l]\"; done < f",
    ),
    ("redir_dev_stderr", Full, "echo to_err > /dev/stderr"),
    ("redir_close", Loose, "echo x >&-; echo $?"),
    ("redir_if", Full, "if true; then echo yes; fi > f; cat f"),
    ("redir_func", Full, "f() { echo in f; }; f > out; cat out"),
    (
        "redir_empty_cmd",
        Full,
        "> empty; [[ -f empty && ! -s empty ]] && echo made",
    ),
    // --- here-docs and here-strings
    (
        "heredoc",
        Full,
        "cat <<EOF\nhello $((1+1))\n  x=$HOME_UNSET.\nEOF",
    ),
    (
        "heredoc_quoted",
        Full,
        "x=1; cat <<'EOF'\n$x `no` $(no)\nEOF",
    ),
    (
        "heredoc_tabs",
        Full,
        "cat <<-EOF\n\tindented\n\t\tmore\n\tEOF",
    ),
    (
        "heredoc_var",
        Full,
        "name=world; cat <<EOF\nhello $name\nEOF",
    ),
    (
        "herestring",
        Full,
        "cat <<< 'some text'; x=v; cat <<< \"$x\"",
    ),
    (
        "heredoc_read",
        Full,
        "read a b <<EOF\n1 2 3\nEOF\necho $a/$b",
    ),
    // --- control flow
    (
        "if_else",
        Full,
        "if false; then echo a; elif true; then echo b; else echo c; fi",
    ),
    ("if_status", Full, "if false; then :; fi; echo $?"),
    (
        "while_loop",
        Full,
        "i=0; while (( i < 3 )); do echo $i; i=$((i+1)); done",
    ),
    (
        "until_loop",
        Full,
        "i=0; until [[ $i == 3 ]]; do echo $i; ((i++)); done",
    ),
    ("for_list", Full, "for x in a b c; do echo $x; done"),
    ("for_arith", Full, "for ((i=0; i<3; i++)); do echo $i; done"),
    (
        "for_positional",
        Full,
        "set -- p q; for x; do echo $x; done",
    ),
    (
        "break",
        Full,
        "for i in 1 2 3 4; do [[ $i == 3 ]] && break; echo $i; done",
    ),
    (
        "continue",
        Full,
        "for i in 1 2 3 4; do [[ $i == 2 ]] && continue; echo $i; done",
    ),
    (
        "break_n",
        Full,
        "for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done; echo out",
    ),
    (
        "continue_n",
        Full,
        "for i in 1 2; do for j in a b; do echo $i$j; continue 2; done; done",
    ),
    ("loop_status", Full, "for i in; do :; done; echo $?"),
    (
        "case_basic",
        Full,
        "x=foo; case $x in f*) echo starts-f;; *) echo other;; esac",
    ),
    (
        "case_alternatives",
        Full,
        "for x in a b c; do case $x in a|b) echo ab;; *) echo not;; esac; done",
    ),
    (
        "case_fallthrough",
        Full,
        "case a in a) echo one;& b) echo two;; c) echo three;; esac",
    ),
    (
        "case_continue",
        Full,
        "case ab in a*) echo one;;& *b) echo two;; *) echo three;; esac",
    ),
    (
        "case_quoted_pattern",
        Full,
        "x='*'; case abc in \"$x\") echo lit;; *) echo glob;; esac",
    ),
    ("case_bracket", Full, "case 5 in [0-9]) echo digit;; esac"),
    // --- functions
    ("func_basic", Full, "greet() { echo \"hi $1\"; }; greet bob"),
    ("func_keyword", Full, "function f { echo kw; }; f"),
    (
        "func_return",
        Full,
        "f() { return 3; echo no; }; f; echo $?",
    ),
    ("func_status", Full, "f() { false; }; f; echo $?"),
    (
        "func_recursion",
        Full,
        "fact() { if (( $1 <= 1 )); then echo 1; else echo $(( $1 * $(fact $(( $1 - 1 ))) )); fi; }; fact 10",
    ),
    (
        "func_args_restore",
        Full,
        "f() { echo $@; }; set -- outer; f inner; echo $@",
    ),
    (
        "func_deep",
        Full,
        "d() { (( $1 > 0 )) && d $(( $1 - 1 )); }; d 200; echo $?",
    ),
    ("func_redefine", Full, "f() { echo 1; }; f() { echo 2; }; f"),
    ("func_unset", Loose, "f() { echo 1; }; unset -f f; f"),
    // --- [[ ]]
    (
        "test_strings",
        Full,
        "[[ abc == a* ]] && echo glob; [[ abc == \"a*\" ]] || echo literal; [[ a < b ]] && echo lt",
    ),
    (
        "test_regex",
        Full,
        "[[ foo123 =~ ^([a-z]+)([0-9]+)$ ]] && echo ${BASH_REMATCH[1]} ${BASH_REMATCH[2]}",
    ),
    (
        "test_files",
        Full,
        "echo x > f; mkdir_=1; [[ -f f ]] && echo file; [[ -d . ]] && echo dir; [[ -e nope ]] || echo none",
    ),
    (
        "test_logic",
        Full,
        "[[ -n x && ! -z x ]] && echo ok; [[ -z x || 1 -eq 1 ]] && echo ok2",
    ),
    (
        "test_numeric",
        Full,
        "[[ 10 -gt 9 ]] && echo gt; [[ 2 -le 2 ]] && echo le",
    ),
    (
        "test_bracket",
        Full,
        "[ a = a ] && echo eq; [ 1 -lt 2 ] && echo lt; test -n \"\" || echo empty",
    ),
    (
        "test_var_set",
        Full,
        "x=; [[ -v x ]] && echo set; [[ -v nope ]] || echo unset",
    ),
    // --- builtins
    (
        "cd_pwd",
        Full,
        "mkdir -p sub/dir; cd sub/dir; pwd | sed 's|.*/w|/w|'",
    ),
    (
        "cd_builtin_pwd",
        Full,
        "mkdir sub; cd sub; echo ${PWD#$OLDPWD}",
    ),
    ("cd_missing", Loose, "cd nowhere; echo $?"),
    (
        "cd_dash",
        Full,
        "mkdir a; cd a; cd - > /dev/null; [[ $PWD == $OLDPWD ]] || echo moved-back",
    ),
    (
        "cd_dotdot",
        Full,
        "mkdir a; cd a; cd ..; [[ -d a ]] && echo parent",
    ),
    (
        "read_basic",
        Full,
        "echo 'one two three' | { read a b; echo \"$a|$b\"; }",
    ),
    (
        "read_r",
        Full,
        "printf 'a\\\\b\\n' | { read -r x; echo \"$x\"; }; printf 'a\\\\b\\n' | { read x; echo \"$x\"; }",
    ),
    (
        "read_eof_status",
        Full,
        "printf 'partial' | { read x; echo \"$? $x\"; }; read y < /dev/null; echo $?",
    ),
    (
        "read_reply",
        Full,
        "echo '  spaced  ' | { read; echo \"[$REPLY]\"; }",
    ),
    (
        "read_array",
        Full,
        "echo 'a b c' | { read -a arr; echo ${arr[2]} ${#arr[@]}; }",
    ),
    (
        "eval",
        Full,
        "cmd='echo evaluated; x=5'; eval $cmd; echo $x",
    ),
    (
        "source",
        Full,
        "echo 'sourced=yes; echo in-file' > lib.sh; . ./lib.sh; echo $sourced",
    ),
    (
        "source_return",
        Full,
        "printf 'echo a\\nreturn 4\\necho b\\n' > s.sh; source ./s.sh; echo $?",
    ),
    (
        "set_positional",
        Full,
        "set -- x y; echo $1$2; set --; echo $#",
    ),
    (
        "type_builtin",
        Full,
        "type cd; type -t echo; f() { :; }; type -t f",
    ),
    (
        "command_v",
        Full,
        "command -v cd; command -v nosuchcmd; echo $?",
    ),
    ("exit_status", Full, "exit 7"),
    ("exit_in_func", Full, "f() { exit 4; }; f; echo not"),
    ("exit_default", Full, "false; exit"),
    (
        "true_false",
        Full,
        "true; echo $?; false; echo $?; :; echo $?",
    ),
    ("printf_basic", Full, "printf '%s-%d\\n' a 5 b 6"),
    ("nested_bash_c", Full, "bash -c 'echo $0 $1' zero one"),
    (
        "sh_script_file",
        Full,
        "printf 'echo script $1\\n' > s.sh; sh s.sh arg",
    ),
    (
        "shebang_script",
        Full,
        "printf '#!/bin/sh\\necho from-shebang\\n' > run.sh; chmod +x run.sh; ./run.sh",
    ),
    (
        "script_on_stdin",
        Full,
        "echo 'echo piped; exit 3' | bash; echo $?",
    ),
    // --- errors
    ("cmd_not_found", Full, "nosuchcommand_xyz; echo $?"),
    ("syntax_error", Loose, "echo a; fi"),
    ("syntax_error_eof", Loose, "if true; then echo x"),
    ("syntax_unclosed_quote", Loose, "echo 'abc"),
    ("errexit", Full, "set -e; echo a; false; echo b"),
    (
        "errexit_condition",
        Full,
        "set -e; if false; then :; fi; false || true; ! true; echo survived",
    ),
    (
        "errexit_and_list",
        Full,
        "set -e; false && true; echo survived",
    ),
    ("nounset", Loose, "set -u; echo $nope; echo after"),
    ("xtrace", Full, "set -x; echo traced; x=1"),
    ("path_cmd_missing", Loose, "./nothere; echo $?"),
];

fn registry() -> Registry {
    Registry::with_native()
}

struct Outcome {
    stdout: String,
    stderr: String,
    status: i32,
    /// One line per file or directory left under the working directory.
    files: Vec<String>,
}

/// A line describing one entry for the comparison of what the scripts left.
fn file_line(rel: &str, kind: &str, mode: u32, content: &[u8]) -> String {
    let shown = String::from_utf8_lossy(&content[..content.len().min(200)]).into_owned();
    format!(
        "{rel} {kind} {:o} {} {shown:?}",
        mode & 0o777,
        content.len()
    )
}

/// What forkbox's script left under `dir` (a path of `fs`), depth first, sorted.
async fn forkbox_files(
    fs: &dyn forkbox_commands::FileSystem,
    dir: &str,
    rel: &str,
    out: &mut Vec<String>,
) {
    let Ok(entries) = fs.read_dir(dir).await else {
        return;
    };
    for e in entries {
        let path = format!("{dir}/{}", e.name);
        let rel = format!("{rel}{}", e.name);
        match e.meta.kind {
            forkbox_commands::FileKind::Dir => {
                out.push(file_line(&rel, "dir", e.meta.mode, b""));
                Box::pin(forkbox_files(fs, &path, &format!("{rel}/"), out)).await;
            }
            forkbox_commands::FileKind::Symlink => {
                let target = fs.readlink(&path).await.unwrap_or_default();
                out.push(file_line(&rel, "link", 0o777, target.as_bytes()));
            }
            _ => {
                let data = forkbox_commands::fs::read_all(fs, &path, 1 << 20)
                    .await
                    .unwrap_or_default();
                out.push(file_line(&rel, "file", e.meta.mode, &data));
            }
        }
    }
}

/// What bash's script left under `dir`, depth first, sorted.
fn bash_files(dir: &std::path::Path, rel: &str, out: &mut Vec<String>) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = format!("{rel}{name}");
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            out.push(file_line(
                &rel,
                "link",
                0o777,
                target.to_string_lossy().as_bytes(),
            ));
        } else if meta.is_dir() {
            out.push(file_line(&rel, "dir", mode, b""));
            bash_files(&e.path(), &format!("{rel}/"), out);
        } else {
            let data = std::fs::read(e.path()).unwrap_or_default();
            out.push(file_line(&rel, "file", mode, &data));
        }
    }
}

async fn run_forkbox(script: &str) -> Outcome {
    use forkbox::fork::{ForkStrategy, Lease, Overlay, ServerId, SessionId};
    // The base holds only the working directory; the session's files live in the fork.
    let base_dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(base_dir.path().join(WORK.trim_start_matches('/'))).expect("mkdir");
    let base = forkbox::storage::Store::local(base_dir.path()).expect("base store");
    let overlay = Overlay::new(base, forkbox::storage::Store::memory());
    let lease = Lease::new(ServerId::new(), std::time::Duration::from_secs(3600));
    let view = overlay
        .create(SessionId::new(), &lease)
        .await
        .expect("fork");
    let vfs: Arc<dyn forkbox_commands::FileSystem> = Arc::new(forkbox::vfs::Vfs::with_quota(
        view,
        forkbox::vfs::Quota::default(),
    ));
    let mut shell = Shell::new(ShellConfig {
        fs: Arc::new(forkbox::vfs::mounts::Mounts::with_devices(vfs.clone())),
        registry: Arc::new(registry()),
        env: vec![
            ("HOME".into(), WORK.into()),
            ("PATH".into(), "/usr/bin:/bin".into()),
            ("LC_ALL".into(), "C".into()),
        ],
        cwd: WORK.into(),
        interactive: false,
        budget: forkbox_commands::Budget::default(),
    });
    let (out_w, out_r) = pipe();
    let (err_w, err_r) = pipe();
    let stdio = Stdio {
        stdin: Input::empty(),
        stdout: out_w,
        stderr: err_w,
        tty: None,
    };
    let read_out =
        tokio::spawn(async move { out_r.read_to_end(64 << 20).await.unwrap_or_default() });
    let read_err =
        tokio::spawn(async move { err_r.read_to_end(64 << 20).await.unwrap_or_default() });
    let run = shell.run_script(script, &stdio, CancellationToken::new());
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .unwrap_or(-1);
    drop(stdio);
    let status = shell.exit_requested().unwrap_or(status);
    drop(shell);
    let mut files = Vec::new();
    forkbox_files(vfs.as_ref(), WORK, "", &mut files).await;
    Outcome {
        stdout: String::from_utf8_lossy(&read_out.await.unwrap_or_default()).into_owned(),
        stderr: String::from_utf8_lossy(&read_err.await.unwrap_or_default()).into_owned(),
        status,
        files,
    }
}

fn run_bash(script: &str) -> Outcome {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("/bin/bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir.path())
        .env_clear()
        .env("HOME", dir.path())
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run bash");
    let root = dir.path().to_string_lossy().into_owned();
    let fix = |b: &[u8]| String::from_utf8_lossy(b).replace(&root, WORK);
    let mut files = Vec::new();
    bash_files(dir.path(), "", &mut files);
    let files = files.into_iter().map(|l| l.replace(&root, WORK)).collect();
    Outcome {
        stdout: fix(&out.stdout),
        stderr: fix(&out.stderr),
        status: out.status.code().unwrap_or(-1),
        files,
    }
}

/// Turns bash's and forkbox's message prefixes into one form.
fn normalise_stderr(s: &str) -> String {
    let mut out = String::new();
    for line in s.lines() {
        let mut l = line.to_string();
        for prefix in [
            "/bin/bash: -c: ",
            "/bin/bash: ",
            "bash: -c: ",
            "bash: ",
            "forkbox: ",
        ] {
            if let Some(rest) = l.strip_prefix(prefix) {
                let rest = match rest.strip_prefix("line ") {
                    Some(r) => r.split_once(": ").map(|x| x.1).unwrap_or(r).to_string(),
                    None => rest.to_string(),
                };
                l = format!("SH: {rest}");
                break;
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_matches_bash() {
    assert!(
        CASES.len() >= 120,
        "the table should cover at least 120 cases"
    );
    let mut failures = Vec::new();
    let mut names = std::collections::HashSet::new();
    for (name, mode, script) in CASES {
        assert!(names.insert(*name), "duplicate case name {name}");
        if let Ok(only) = std::env::var("SHELL_CASE")
            && !name.contains(only.as_str())
        {
            continue;
        }
        let fb = run_forkbox(script).await;
        let bash = run_bash(script);
        let (fe, be) = (normalise_stderr(&fb.stderr), normalise_stderr(&bash.stderr));
        let stderr_ok = match mode {
            Full => fe == be,
            Loose => fe.is_empty() == be.is_empty(),
        };
        if fb.stdout != bash.stdout
            || fb.status != bash.status
            || !stderr_ok
            || fb.files != bash.files
        {
            failures.push(format!(
                "--- case {name}\nscript: {script}\nforkbox: status {}\n  stdout: {:?}\n  stderr: {:?}\n  files: {:?}\nbash:    status {}\n  stdout: {:?}\n  stderr: {:?}\n  files: {:?}\n",
                fb.status, fb.stdout, fe, fb.files, bash.status, bash.stdout, be, bash.files
            ));
        }
    }
    if !failures.is_empty() {
        panic!(
            "{} of {} cases differ from bash:\n{}",
            failures.len(),
            CASES.len(),
            failures.join("\n")
        );
    }
}
