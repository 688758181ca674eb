//! People at a terminal: a real `ssh -tt` inside tmux, typing with `send-keys` and reading
//! the screen with `capture-pane`. Every check polls the pane until the text appears
//! (under a generous deadline, never a timed assertion).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail loudly on a broken assumption"
)]

#[path = "support/server.rs"]
mod support;

use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use support::Server;

/// How long the screen may take to show what a test waits for.
const DEADLINE: Duration = Duration::from_secs(60);

/// How long a WASI tool may take to show its first output: python's first start on a
/// server compiles its module (or loads it from the compiled cache).
const WASI_DEADLINE: Duration = Duration::from_secs(240);

/// One tmux server (its own socket) running `ssh -tt` to `server` in a 100×30 window.
struct Pane {
    socket: String,
    /// The server's socket file, removed at the end (`kill-server` leaves it).
    socket_path: Option<String>,
}

impl Pane {
    fn open(server: &Server) -> Pane {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let socket = format!(
            "forkbox-pty-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut ssh = server.ssh_cmd("tester");
        ssh.arg("-tt");
        let mut line = String::from("ssh");
        for a in ssh.get_args() {
            line.push(' ');
            line.push_str(&quote(&a.to_string_lossy()));
        }
        line.push_str("; echo SSH-EXIT=$?; sleep 600");
        let mut pane = Pane {
            socket,
            socket_path: None,
        };
        let ok = pane
            .tmux()
            .args(["new-session", "-d", "-x", "100", "-y", "30", &line])
            .status()
            .unwrap();
        assert!(ok.success(), "tmux new-session failed");
        pane.wait_for("the prompt", |s| s.contains("tester@forkbox:/$"));
        let path = pane
            .tmux()
            .args(["display-message", "-p", "#{socket_path}"])
            .output()
            .unwrap();
        pane.socket_path = Some(String::from_utf8_lossy(&path.stdout).trim().to_string());
        pane
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    /// `tmux send-keys` with these key names and strings.
    fn keys(&self, keys: &[&str]) {
        let ok = self.tmux().arg("send-keys").args(keys).status().unwrap();
        assert!(ok.success());
    }

    /// Sends these bytes (in hex) as keys, as they are: bytes that are no UTF-8 and
    /// escape sequences of no terminal.
    fn keys_hex(&self, bytes: &[&str]) {
        let ok = self
            .tmux()
            .args(["send-keys", "-H"])
            .args(bytes)
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Types `text` literally.
    fn type_text(&self, text: &str) {
        let ok = self
            .tmux()
            .args(["send-keys", "-l", text])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Pastes `text` as a terminal does: tmux brackets it (`ESC[200~ … ESC[201~`) when
    /// the program asked for bracketed paste, and sends each newline as a carriage return.
    fn paste(&self, text: &str) {
        let file = std::env::temp_dir().join(format!("{}-paste", self.socket));
        std::fs::write(&file, text).unwrap();
        let ok = self.tmux().arg("load-buffer").arg(&file).status().unwrap();
        assert!(ok.success());
        let _ = std::fs::remove_file(&file);
        let ok = self
            .tmux()
            .args(["paste-buffer", "-p", "-d"])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    fn screen(&self) -> String {
        let out = self.tmux().args(["capture-pane", "-p"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Polls the screen until `ok` holds; panics with the screen past the deadline.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_for_within(DEADLINE, what, ok)
    }

    /// [`Pane::wait_for`] with a deadline of its own.
    fn wait_for_within(&self, deadline: Duration, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < deadline,
                "never saw {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for a screen line equal to `line` (trailing blanks aside).
    fn wait_line(&self, line: &str) -> String {
        self.wait_for(&format!("the line {line:?}"), |s| has_line(s, line))
    }

    /// Waits for `n` prompts on the screen (the command before has finished).
    fn wait_prompts(&self, n: usize) {
        self.wait_for(&format!("{n} prompts"), |s| {
            s.matches("tester@forkbox:").count() >= n
        });
    }

    /// Clears the screen (Ctrl-L) so later checks see only what follows.
    fn clear(&self) {
        self.keys(&["C-l"]);
        self.wait_for("a cleared screen", |s| {
            s.lines().filter(|l| !l.trim().is_empty()).count() == 1
                && s.starts_with("tester@forkbox:")
        });
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
        if let Some(path) = self.socket_path.take().filter(|p| !p.is_empty()) {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn has_line(screen: &str, line: &str) -> bool {
    screen.lines().any(|l| l.trim_end() == line)
}

#[test]
fn editing_keys_move_insert_and_kill() {
    let server = Server::start();
    let pane = Pane::open(&server);
    // Move left and insert; Ctrl-A and Ctrl-E.
    pane.type_text("cho wrld");
    pane.keys(&["Left", "Left", "Left", "o", "C-a", "e", "C-e"]);
    pane.type_text(" again");
    pane.keys(&["Enter"]);
    pane.wait_line("world again");
    // Ctrl-W takes the word before the cursor.
    pane.type_text("echo one two");
    pane.keys(&["C-w"]);
    pane.type_text("three");
    pane.keys(&["Enter"]);
    pane.wait_line("one three");
    // Ctrl-U kills the line, Ctrl-Y brings it back elsewhere.
    pane.type_text("echo kept");
    pane.keys(&["C-u"]);
    pane.type_text("echo first; ");
    pane.keys(&["C-y", "Enter"]);
    pane.wait_line("kept");
    pane.wait_line("first");
    // Home/End keys, Delete, Ctrl-K.
    pane.type_text("Xecho start");
    pane.keys(&["Home", "DC", "End"]);
    pane.type_text(" tail junk");
    pane.keys(&["M-b", "C-k", "Enter"]);
    pane.wait_line("start tail");
}

#[test]
fn wide_and_combining_characters_edit_as_one() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("echo 中文e\u{301}x");
    pane.keys(&["Left", "Left", "Left"]);
    pane.type_text("Z");
    pane.keys(&["Enter"]);
    pane.wait_line("中Z文e\u{301}x");
    pane.type_text("echo 中文e\u{301}x");
    pane.keys(&["Left", "BSpace", "BSpace", "Enter"]);
    pane.wait_line("中x");
}

#[test]
fn history_with_up_and_reverse_search() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("echo first-entry");
    pane.keys(&["Enter"]);
    pane.wait_line("first-entry");
    pane.type_text("echo second-entry");
    pane.keys(&["Enter"]);
    pane.wait_line("second-entry");
    pane.clear();
    pane.keys(&["Up", "Up", "Enter"]);
    pane.wait_line("first-entry");
    pane.clear();
    pane.keys(&["C-r"]);
    pane.type_text("cond");
    pane.wait_for("the search prompt", |s| {
        s.contains("(reverse-i-search)`cond': echo second-entry")
    });
    pane.keys(&["Enter"]);
    pane.wait_line("second-entry");
}

#[test]
fn history_expansion_shows_the_line_it_runs() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("echo alpha beta/gamma.txt");
    pane.keys(&["Enter"]);
    pane.wait_line("alpha beta/gamma.txt");
    pane.clear();
    pane.type_text("echo !$:t:r and !!:1");
    pane.keys(&["Enter"]);
    // The expanded line, then its output.
    let s = pane.wait_line("gamma and alpha");
    assert!(has_line(&s, "echo gamma and alpha"), "{s}");
    pane.type_text("^alpha^delta");
    pane.keys(&["Enter"]);
    pane.wait_line("gamma and delta");
    pane.type_text("echo !nope; echo ran");
    pane.keys(&["Enter"]);
    pane.wait_line("-bash: !nope: event not found");
    // Single quotes keep `!`; the failed line was neither run nor remembered.
    pane.type_text("echo 'hi!!' && history");
    pane.keys(&["Enter"]);
    let s = pane.wait_line("    4  echo 'hi!!' && history");
    assert!(has_line(&s, "hi!!"), "{s}");
    assert!(!has_line(&s, "ran"), "{s}");
    assert!(has_line(&s, "    3  echo gamma and delta"), "{s}");
    // Nor is it expanded in a here-document's body.
    pane.clear();
    pane.type_text("cat <<EOF");
    pane.keys(&["Enter"]);
    pane.type_text("x !! y");
    pane.keys(&["Enter"]);
    pane.type_text("EOF");
    pane.keys(&["Enter"]);
    let s = pane.wait_line("x !! y");
    assert!(has_line(&s, "> x !! y"), "{s}");
}

#[test]
fn a_bracketed_paste_is_text_until_enter() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.clear();
    // Its newlines do not run it and its Tab does not complete.
    pane.paste("echo pasted-one\necho\tpasted-two");
    let s = pane.wait_for("the pasted lines", |s| s.contains("echo pasted-one"));
    assert!(!has_line(&s, "pasted-one"), "{s}");
    pane.keys(&["Enter"]);
    pane.wait_line("pasted-one");
    pane.wait_line("pasted-two");
    // A megabyte paste is cut at the line bound, never stalls, and the prompt comes back.
    pane.paste(&"x".repeat(1 << 20));
    pane.keys(&["Enter"]);
    pane.wait_for("the refusal", |s| {
        s.contains("line longer than 65536 bytes")
    });
    pane.keys(&["C-l"]);
    pane.type_text("echo still-here");
    pane.keys(&["Enter"]);
    pane.wait_line("still-here");
}

#[test]
fn tab_completes_commands_paths_and_lists_on_double_tab() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text(
        "mkdir -p project/src 'my dir' && echo content > project/src/notes.txt && touch report-a report-b",
    );
    pane.keys(&["Enter"]);
    pane.wait_prompts(2);
    pane.clear();
    // A command name.
    pane.type_text("ech");
    pane.keys(&["Tab"]);
    pane.type_text("completed-command");
    pane.keys(&["Enter"]);
    pane.wait_line("completed-command");
    // A path, one directory level at a time.
    pane.type_text("cat proj");
    pane.keys(&["Tab"]);
    pane.type_text("sr");
    pane.keys(&["Tab"]);
    pane.type_text("no");
    pane.keys(&["Tab", "Enter"]);
    pane.wait_line("content");
    // A name with a space is escaped; directories get a slash.
    pane.type_text("echo my");
    pane.keys(&["Tab"]);
    pane.wait_for("the escaped name", |s| s.contains("$ echo my\\ dir/"));
    pane.keys(&["Enter"]);
    pane.wait_line("my dir/");
    pane.clear();
    // Two candidates: the common part, then a listing in columns.
    pane.type_text("ls rep");
    pane.keys(&["Tab", "Tab"]);
    pane.wait_line("report-a  report-b");
    pane.wait_for("the line kept after the listing", |s| {
        s.lines().last_non_blank().ends_with("$ ls report-")
    });
}

trait LastNonBlank<'a> {
    fn last_non_blank(self) -> &'a str;
}

impl<'a, I: DoubleEndedIterator<Item = &'a str>> LastNonBlank<'a> for I {
    fn last_non_blank(mut self) -> &'a str {
        self.rfind(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim_end()
    }
}

#[test]
fn multi_line_input_continues_with_the_secondary_prompt() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("for i in 1 2; do");
    pane.keys(&["Enter"]);
    pane.wait_for("the continuation prompt", |s| has_line(s, ">"));
    pane.type_text("echo $i");
    pane.keys(&["Enter"]);
    pane.type_text("done");
    pane.keys(&["Enter"]);
    let s = pane.wait_line("2");
    assert!(
        has_line(&s, "> echo $i") && has_line(&s, "> done") && has_line(&s, "1"),
        "{s}"
    );
    // An unclosed quote continues too.
    pane.type_text("echo 'a");
    pane.keys(&["Enter"]);
    pane.type_text("b'");
    pane.keys(&["Enter"]);
    pane.wait_line("b");
}

#[test]
fn ctrl_c_interrupts_sleep_and_a_shell_loop() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("sleep 100");
    pane.keys(&["Enter"]);
    // The command has started once the keys no longer reach the editor.
    std::thread::sleep(Duration::from_millis(300));
    pane.keys(&["C-c"]);
    pane.wait_prompts(2);
    pane.type_text("echo after-sleep $?");
    pane.keys(&["Enter"]);
    pane.wait_line("after-sleep 130");
    pane.type_text("while :; do :; done");
    pane.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    pane.keys(&["C-c"]);
    pane.wait_prompts(4);
    pane.type_text("echo after-loop");
    pane.keys(&["Enter"]);
    pane.wait_line("after-loop");
}

#[test]
fn window_resize_sets_columns_and_ls_lays_out_for_it() {
    let server = Server::start();
    let pane = Pane::open(&server);
    let ok = pane
        .tmux()
        .args(["resize-window", "-x", "60", "-y", "20"])
        .status()
        .unwrap();
    assert!(ok.success());
    pane.type_text("echo $COLUMNS x $LINES");
    pane.keys(&["Enter"]);
    pane.wait_line("60 x 20");
    pane.type_text(
        "mkdir t && cd t && touch aaaaaaaaaa bbbbbbbbbb cccccccccc dddddddddd eeeeeeeeee ffffffffff && ls",
    );
    pane.keys(&["Enter"]);
    // Six names of 10 in 60 columns: two rows, down then across, as GNU ls lays them out.
    pane.wait_line("aaaaaaaaaa  cccccccccc  eeeeeeeeee");
    pane.wait_line("bbbbbbbbbb  dddddddddd  ffffffffff");
}

#[test]
fn a_command_reads_typed_lines_and_ctrl_d_ends_its_input() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("cat > f; wc -l < f");
    pane.keys(&["Enter"]);
    std::thread::sleep(Duration::from_millis(300));
    pane.type_text("one");
    pane.keys(&["Enter"]);
    pane.type_text("twX");
    pane.keys(&["BSpace"]);
    pane.type_text("o");
    pane.keys(&["Enter", "C-d"]);
    pane.wait_line("2");
    pane.type_text("cat f");
    pane.keys(&["Enter"]);
    pane.wait_line("two");
}

#[test]
fn ctrl_d_on_an_empty_line_logs_out() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.keys(&["C-d"]);
    let s = pane.wait_line("SSH-EXIT=0");
    // As bash says it: after the prompt, where the line would have been.
    assert!(has_line(&s, "tester@forkbox:/$ logout"), "{s}");
}

#[test]
fn exit_gives_ssh_its_status() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("exit 3");
    pane.keys(&["Enter"]);
    pane.wait_line("SSH-EXIT=3");
}

#[test]
fn nano_saves_a_file_that_cat_then_shows() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("nano notes.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("nano's help lines", |s| {
        s.contains("^X") && s.contains("Exit")
    });
    pane.type_text("hello from nano");
    pane.keys(&["Enter"]);
    pane.type_text("second line");
    pane.keys(&["C-o"]);
    pane.wait_for("the file-name prompt", |s| s.contains("File Name to Write"));
    pane.keys(&["Enter"]);
    pane.wait_for("the write report", |s| s.contains("[ Wrote 2 lines ]"));
    pane.keys(&["C-x"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("cat notes.txt; wc -l < notes.txt");
    pane.keys(&["Enter"]);
    pane.wait_line("hello from nano");
    pane.wait_line("second line");
    pane.wait_line("2");
}

#[test]
fn vi_inserts_and_writes_with_wq() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("printf 'first\\n' > v.txt; vi v.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("vi's file line", |s| s.contains("\"v.txt\""));
    // Open a line below, type, leave insert mode, write and quit.
    pane.keys(&["o"]);
    pane.type_text("typed in vi");
    pane.keys(&["Escape"]);
    pane.type_text(":wq");
    pane.keys(&["Enter"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("cat v.txt");
    pane.keys(&["Enter"]);
    pane.wait_line("first");
    pane.wait_line("typed in vi");
}

#[test]
fn less_pages_a_pipe_and_quits_with_q() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("seq 200 | less");
    pane.keys(&["Enter"]);
    // The first screenful, with less's prompt on the last row.
    let first = pane.wait_line("29");
    assert!(has_line(&first, "1"), "{first}");
    assert!(!has_line(&first, "31"), "one screenful only:\n{first}");
    pane.keys(&["Space"]);
    pane.wait_line("58");
    pane.keys(&["G"]);
    pane.wait_for("the end", |s| has_line(s, "200") && s.contains("(END)"));
    pane.keys(&["q"]);
    pane.wait_prompts(1);
    pane.type_text("echo after-less");
    pane.keys(&["Enter"]);
    pane.wait_line("after-less");
}

#[test]
fn vi_searches_with_a_regular_expression() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("printf 'alpha 1\\nbeta 22\\ngamma 333\\n' > r.txt; vi r.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("vi's file line", |s| s.contains("\"r.txt\""));
    // `\d\{3}` finds the first run of three digits; `x` deletes the character there.
    pane.type_text("/\\d\\{3}");
    pane.keys(&["Enter", "x"]);
    pane.type_text(":wq");
    pane.keys(&["Enter"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("cat r.txt");
    pane.keys(&["Enter"]);
    pane.wait_line("gamma 33");
    pane.wait_line("beta 22");
}

#[test]
fn less_searches_with_a_regular_expression() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("seq 200 | less");
    pane.keys(&["Enter"]);
    pane.wait_line("29");
    pane.type_text("/^1[5-9]0$");
    pane.keys(&["Enter"]);
    let s = pane.wait_for("the match at the top", |s| {
        s.lines().next().is_some_and(|l| l.trim_end() == "150")
    });
    assert!(!has_line(&s, "149"), "{s}");
    pane.keys(&["n"]);
    pane.wait_for("the next match at the top", |s| {
        s.lines().next().is_some_and(|l| l.trim_end() == "160")
    });
    pane.keys(&["q"]);
    pane.wait_prompts(1);
}

#[test]
fn character_and_word_moves_and_history_down() {
    let server = Server::start();
    let pane = Pane::open(&server);
    // Ctrl-B and Ctrl-F move by a character, Alt-B to a word's start, Alt-F to its end.
    pane.type_text("echo abc def");
    pane.keys(&["C-b", "C-b", "C-b", "C-f"]);
    pane.type_text("X");
    pane.keys(&["M-b", "M-b", "M-f"]);
    pane.type_text("Y");
    pane.keys(&["Enter"]);
    pane.wait_line("abcY dXef");
    // Down comes back from an older entry to a newer one.
    pane.type_text("echo h-two");
    pane.keys(&["Enter"]);
    pane.wait_line("h-two");
    pane.clear();
    pane.keys(&["Up", "Up", "Down", "Enter"]);
    pane.wait_line("h-two");
}

#[test]
fn tab_completes_variables_and_wasi_tool_names() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("my_long_variable=42");
    pane.keys(&["Enter"]);
    pane.wait_prompts(2);
    pane.clear();
    pane.type_text("echo $my_lo");
    pane.keys(&["Tab"]);
    pane.wait_for("the completed variable", |s| {
        s.lines()
            .last_non_blank()
            .ends_with("$ echo $my_long_variable")
    });
    pane.keys(&["Enter"]);
    pane.wait_line("42");
    pane.clear();
    // A WASI tool of the manifest is a command name like any other.
    pane.type_text("qj");
    pane.keys(&["Tab"]);
    pane.wait_for("the completed tool", |s| {
        s.lines().last_non_blank().ends_with("$ qjs")
    });
    pane.keys(&["C-u"]);
}

#[test]
fn a_trailing_backslash_pipe_or_and_continues_the_line() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("echo one \\");
    pane.keys(&["Enter"]);
    pane.wait_for("the continuation prompt", |s| has_line(s, ">"));
    pane.type_text("two");
    pane.keys(&["Enter"]);
    pane.wait_line("one two");
    pane.type_text("echo piped |");
    pane.keys(&["Enter"]);
    pane.type_text("tr a-z A-Z");
    pane.keys(&["Enter"]);
    let s = pane.wait_line("PIPED");
    assert!(has_line(&s, "> tr a-z A-Z"), "{s}");
    pane.type_text("true &&");
    pane.keys(&["Enter"]);
    pane.type_text("echo and-ran");
    pane.keys(&["Enter"]);
    let s = pane.wait_line("and-ran");
    assert!(has_line(&s, "> echo and-ran"), "{s}");
}

#[test]
fn ps1_escapes_make_the_prompt() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("PS1='[\\u at \\h in \\w (\\W)]\\$ '; cd docs");
    pane.keys(&["Enter"]);
    pane.wait_for("the new prompt", |s| {
        s.lines()
            .last_non_blank()
            .starts_with("[tester at forkbox in /docs (docs)]$")
    });
}

#[test]
fn nano_searches_and_bad_bytes_never_break_it() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("printf 'alpha\\nbeta\\ngamma\\n' > n.txt; nano n.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("nano's help lines", |s| {
        s.contains("^X") && s.contains("Exit")
    });
    // Ctrl-W searches; the cursor lands on the match.
    pane.keys(&["C-w"]);
    pane.wait_for("the search prompt", |s| s.contains("Search:"));
    pane.type_text("gam");
    pane.keys(&["Enter"]);
    pane.type_text("Z");
    pane.keys(&["C-o"]);
    pane.wait_for("the file-name prompt", |s| s.contains("File Name to Write"));
    pane.keys(&["Enter"]);
    pane.wait_for("the write report", |s| s.contains("[ Wrote 3 lines ]"));
    // Bytes that are not UTF-8, escape sequences nobody knows, and a big paste: the editor
    // goes on and still quits.
    pane.keys_hex(&[
        "ff", "fe", "c3", "28", "e2", "82", "1b", "5b", "39", "39", "7e",
    ]);
    pane.type_text("\u{1b}[1;99Q\u{1b}]junk\u{7}");
    pane.paste(&"pasted text ".repeat(20_000));
    pane.keys(&["C-x"]);
    pane.wait_for("the question", |s| s.contains("Save modified buffer?"));
    pane.keys(&["n"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("cat n.txt");
    pane.keys(&["Enter"]);
    pane.wait_line("Zgamma");
    pane.wait_line("beta");
}

#[test]
fn more_pages_a_file_on_a_terminal() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("seq 100 > s.txt; more s.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("the first page and its prompt", |s| {
        has_line(s, "29") && s.contains("--More--")
    });
    pane.keys(&["Space"]);
    pane.wait_line("58");
    pane.keys(&["q"]);
    pane.wait_prompts(1);
    pane.type_text("echo after-more");
    pane.keys(&["Enter"]);
    pane.wait_line("after-more");
}

/// `man NAME` on a terminal shows the page through the pager (less: its `(END)` or `:`
/// prompt on the last row), `q` leaves it, and the session goes on.
#[test]
fn man_pages_a_manual_page_on_a_terminal() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("man head");
    pane.keys(&["Enter"]);
    let page = pane.wait_for("the page of head", |s| {
        s.contains("HEAD(1)") && has_line(s, "NAME") && has_line(s, "SYNOPSIS")
    });
    assert!(
        page.contains("       head - output the first part of files"),
        "{page}"
    );
    // A pager holds the screen: no prompt until it is left.
    assert!(!page.contains("tester@forkbox:"), "{page}");
    pane.keys(&["G"]);
    pane.wait_for("the end of the page", |s| s.contains("(END)"));
    pane.keys(&["q"]);
    pane.wait_prompts(1);
    pane.type_text("echo after-man");
    pane.keys(&["Enter"]);
    pane.wait_line("after-man");
}

/// vi keeps every byte it was not asked to change: a file with bytes that are not UTF-8
/// and escape sequences no terminal knows is edited on two lines (one of them holding
/// bad bytes) and written; the result is byte for byte the file expected.
#[test]
fn vi_keeps_bad_bytes_it_did_not_touch() {
    let server = Server::start();
    let pane = Pane::open(&server);
    let original = r"ok\377\376 tail\n\033[99~ and \033]junk\007\n\303\050 end\nlast\200\n";
    let expected = r"top\nok\377\376 tail\n\033[99~ and \033]junk\007\n\303\050 end!\nlast\200\n";
    pane.type_text(&format!(
        "printf '{original}' > bad.txt; printf '{expected}' > want.txt; vi bad.txt"
    ));
    pane.keys(&["Enter"]);
    pane.wait_for("vi's file line", |s| s.contains("\"bad.txt\" 4L"));
    // Keys that are no UTF-8 and escape sequences no terminal sends change nothing.
    pane.keys_hex(&[
        "ff", "fe", "c3", "28", "1b", "5b", "39", "39", "7e", "1b", "5b", "31", "3b", "39", "39",
        "51",
    ]);
    // A new first line, then `!` at the end of the line holding `\303(`.
    pane.keys(&["O"]);
    pane.type_text("top");
    pane.keys(&["Escape"]);
    pane.type_text("3jA!");
    pane.keys(&["Escape"]);
    pane.type_text(":wq");
    pane.keys(&["Enter"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("cmp bad.txt want.txt && echo same-$((6*7))");
    pane.keys(&["Enter"]);
    pane.wait_line("same-42");
}

/// 200 KB pasted into vi's insert mode and into the line editor: neither crashes nor
/// stalls, and both still answer afterwards (vi keeps every pasted line; the line editor
/// takes a line up to its bound and refuses a longer one with a reason).
#[test]
fn a_big_paste_into_vi_and_the_line_editor_is_taken_whole() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text("vi big.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("vi's file line", |s| s.contains("\"big.txt\""));
    pane.keys(&["i"]);
    pane.paste(&"pasted line of text\n".repeat(10_000));
    pane.keys(&["Escape"]);
    pane.type_text(":wq");
    pane.keys(&["Enter"]);
    pane.wait_prompts(1);
    pane.clear();
    pane.type_text("wc -lc < big.txt");
    pane.keys(&["Enter"]);
    pane.wait_for("the pasted file's size", |s| {
        s.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["10001", "200001"])
    });
    pane.clear();
    // A line of 60,000 characters pasted at the prompt is taken whole.
    pane.type_text("printf %s '");
    pane.paste(&"abcdefghij".repeat(6_000));
    pane.type_text("' | wc -c");
    pane.keys(&["Enter"]);
    pane.wait_line("60000");
    pane.clear();
    // 200 KB is past the longest line the editor takes (64 KiB): the line is refused with
    // a reason, and the prompt comes back.
    pane.type_text("printf %s '");
    pane.paste(&"abcdefghij".repeat(20_000));
    pane.type_text("' | wc -c");
    pane.keys(&["Enter"]);
    pane.wait_for("the refusal", |s| {
        s.contains("line longer than 65536 bytes")
    });
    pane.clear();
    pane.type_text("echo after-paste");
    pane.keys(&["Enter"]);
    pane.wait_line("after-paste");
}

/// Ctrl-C stops a WASI tool that computes without end (python's `while True: pass`),
/// alone or in a pipeline, and gives the prompt back; the session goes on.
#[test]
fn ctrl_c_interrupts_a_busy_wasi_tool() {
    let server = Server::start();
    let pane = Pane::open(&server);
    pane.type_text(r#"python3 -c 'print("spin" + "ning", flush=True); exec("while True: pass")'"#);
    pane.keys(&["Enter"]);
    pane.wait_for_within(WASI_DEADLINE, "python's first line", |s| {
        has_line(s, "spinning")
    });
    pane.keys(&["C-c"]);
    pane.wait_prompts(2);
    pane.type_text("echo after-python $?");
    pane.keys(&["Enter"]);
    pane.wait_line("after-python 130");
    // In a pipeline every stage is interrupted, as SIGINT reaches bash's whole foreground
    // process group: `cat` too, though it saw its input end first.
    pane.clear();
    pane.type_text(
        r#"python3 -c 'print("spin" + "ning", flush=True); exec("while True: pass")' | cat"#,
    );
    pane.keys(&["Enter"]);
    pane.wait_for_within(WASI_DEADLINE, "python's first line", |s| {
        has_line(s, "spinning")
    });
    pane.keys(&["C-c"]);
    pane.wait_prompts(2);
    pane.type_text("echo after-pipe $? ${PIPESTATUS[*]}");
    pane.keys(&["Enter"]);
    pane.wait_line("after-pipe 130 130 130");
    pane.type_text("echo still-$((6*7))");
    pane.keys(&["Enter"]);
    pane.wait_line("still-42");
}
