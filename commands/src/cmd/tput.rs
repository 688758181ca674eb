//! `tput` (ncurses): print a terminal capability for the terminal type in `$TERM` (or
//! `-T`): colours and attributes (`setaf 1`, `bold`, `sgr0`), cursor movement (`cup 2 3`),
//! clearing, and the numbers (`cols`, `lines`, `colors`). Sessions have no terminfo
//! database, so the common terminal types' entries are built in (as `infocmp` prints
//! them), and parameterised strings go through a small `tparm`.

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

/// The entries of the terminal types sessions meet, in `infocmp -1 -x` notation
/// (booleans, `name#number`, `name=string`), each as pieces searched in order: a variant
/// is its differences before its base entry's capabilities.
const ENTRIES: &[(&str, &[&str])] = &[
    ("xterm", &[COLORS_8, E3, XTERM]),
    ("xterm-256color", &[COLORS_256, E3, XTERM]),
    ("screen", &[SCREEN_SO, COLORS_8, SCREEN]),
    ("screen-256color", &[SCREEN_SO, COLORS_256, SCREEN]),
    ("tmux", &[TMUX, COLORS_8, E3, SCREEN]),
    ("tmux-256color", &[TMUX, COLORS_256, E3, SCREEN]),
    ("linux", &[E3, LINUX]),
    ("vt100", &[VT100]),
    ("dumb", &[DUMB]),
];

const XTERM: &str = r"am,bce,km,xenl,cols#80,it#8,lines#24,bel=^G,blink=\E[5m,bold=\E[1m,civis=\E[?25l,clear=\E[H\E[2J,cnorm=\E[?12l\E[?25h,cr=\r,cub=\E[%p1%dD,cub1=^H,cud=\E[%p1%dB,cud1=\n,cuf=\E[%p1%dC,cuf1=\E[C,cup=\E[%i%p1%d;%p2%dH,cuu=\E[%p1%dA,cuu1=\E[A,cvvis=\E[?12;25h,dim=\E[2m,dl1=\E[M,ech=\E[%p1%dX,ed=\E[J,el=\E[K,el1=\E[1K,home=\E[H,hpa=\E[%i%p1%dG,il1=\E[L,ind=\n,invis=\E[8m,op=\E[39;49m,rc=\E8,rev=\E[7m,ri=\EM,ritm=\E[23m,rmam=\E[?7l,rmcup=\E[?1049l\E[23;0;0t,rmso=\E[27m,rmul=\E[24m,sc=\E7,sgr0=\E(B\E[m,sitm=\E[3m,smam=\E[?7h,smcup=\E[?1049h\E[22;0;0t,smso=\E[7m,smul=\E[4m,vpa=\E[%i%p1%dd";
const COLORS_8: &str = r"colors#8,setab=\E[4%p1%dm,setaf=\E[3%p1%dm";
const COLORS_256: &str = r"colors#256,setab=\E[%?%p1%{8}%<%t4%p1%d%e%p1%{16}%<%t10%p1%{8}%-%d%e48;5;%p1%d%;m,setaf=\E[%?%p1%{8}%<%t3%p1%d%e%p1%{16}%<%t9%p1%{8}%-%d%e38;5;%p1%d%;m";
const E3: &str = r"E3=\E[3J";
const SCREEN: &str = r"am,km,xenl,cols#80,it#8,lines#24,bel=^G,blink=\E[5m,bold=\E[1m,civis=\E[?25l,clear=\E[H\E[J,cnorm=\E[34h\E[?25h,cr=\r,cub=\E[%p1%dD,cub1=^H,cud=\E[%p1%dB,cud1=\n,cuf=\E[%p1%dC,cuf1=\E[C,cup=\E[%i%p1%d;%p2%dH,cuu=\E[%p1%dA,cuu1=\EM,cvvis=\E[34l,dim=\E[2m,dl1=\E[M,ed=\E[J,el=\E[K,el1=\E[1K,flash=\Eg,home=\E[H,hpa=\E[%i%p1%dG,il1=\E[L,ind=\n,op=\E[39;49m,rc=\E8,rev=\E[7m,ri=\EM,rmcup=\E[?1049l,rmul=\E[24m,sc=\E7,sgr0=\E[m\017,smcup=\E[?1049h,smul=\E[4m,vpa=\E[%i%p1%dd";
const SCREEN_SO: &str = r"rmso=\E[23m,smso=\E[3m";
const TMUX: &str =
    r"hs,dsl=\E]0;\007,fsl=^G,invis=\E[8m,ritm=\E[23m,rmso=\E[27m,sitm=\E[3m,smso=\E[7m,tsl=\E]0;";
const LINUX: &str = r"am,bce,xenl,colors#8,it#8,bel=^G,blink=\E[5m,bold=\E[1m,civis=\E[?25l\E[?1c,clear=\E[H\E[J,cnorm=\E[?25h\E[?0c,cr=\r,cub=\E[%p1%dD,cub1=^H,cud=\E[%p1%dB,cud1=\n,cuf=\E[%p1%dC,cuf1=\E[C,cup=\E[%i%p1%d;%p2%dH,cuu=\E[%p1%dA,cuu1=\E[A,cvvis=\E[?25h\E[?8c,dim=\E[2m,dl1=\E[M,ech=\E[%p1%dX,ed=\E[J,el=\E[K,el1=\E[1K,home=\E[H,hpa=\E[%i%p1%dG,il1=\E[L,ind=\n,op=\E[39;49m,rc=\E8,rev=\E[7m,ri=\EM,rmam=\E[?7l,rmso=\E[27m,rmul=\E[24m,sc=\E7,setab=\E[4%p1%dm,setaf=\E[3%p1%dm,sgr0=\E[m\017,smam=\E[?7h,smso=\E[7m,smul=\E[4m,vpa=\E[%i%p1%dd";
const VT100: &str = r"am,xenl,cols#80,it#8,lines#24,bel=^G,blink=\E[5m$<2>,bold=\E[1m$<2>,clear=\E[H\E[J$<50>,cr=\r,cub=\E[%p1%dD,cub1=^H,cud=\E[%p1%dB,cud1=\n,cuf=\E[%p1%dC,cuf1=\E[C$<2>,cup=\E[%i%p1%d;%p2%dH$<5>,cuu=\E[%p1%dA,cuu1=\E[A$<2>,ed=\E[J$<50>,el=\E[K$<3>,el1=\E[1K$<3>,home=\E[H,ind=\n,rc=\E8,rev=\E[7m$<2>,ri=\EM$<5>,rmam=\E[?7l,rmso=\E[m$<2>,rmul=\E[m$<2>,sc=\E7,sgr0=\E[m\017$<2>,smam=\E[?7h,smso=\E[7m$<2>,smul=\E[4m$<2>";
const DUMB: &str = r"am,cols#80,bel=^G,cr=\r,cud1=\n,ind=\n";

/// The boolean, numeric and string capabilities tput knows by name; a name outside these
/// is an unknown capability (status 4), one inside that the terminal lacks is status 1.
const BOOLEANS: &[&str] = &["am", "bce", "km", "xenl", "hs"];
const NUMBERS: &[&str] = &["colors", "cols", "it", "lines"];
const STRINGS: &[&str] = &[
    "E3", "bel", "blink", "bold", "civis", "clear", "cnorm", "cr", "cub", "cub1", "cud", "cud1",
    "cuf", "cuf1", "cup", "cuu", "cuu1", "cvvis", "dim", "dl1", "dsl", "ech", "ed", "el", "el1",
    "flash", "fsl", "home", "hpa", "il1", "ind", "invis", "op", "rc", "rev", "ri", "ritm", "rmam",
    "rmcup", "rmso", "rmul", "sc", "setab", "setaf", "sgr0", "sitm", "smam", "smcup", "smso",
    "smul", "tsl", "vpa",
];

/// A terminal's entry: its capabilities in infocmp notation, the most specific first.
fn entry(term: &str) -> Option<&'static [&'static str]> {
    ENTRIES
        .iter()
        .find(|(name, _)| *name == term)
        .map(|(_, e)| *e)
}

/// The value of capability `cap` in an entry: `Some("")` for a boolean that is set.
fn lookup(entry: &[&str], cap: &str) -> Option<String> {
    for text in entry {
        for field in text.split(',') {
            if field == cap {
                return Some(String::new());
            }
            if let Some(v) = field.strip_prefix(cap)
                && let Some(v) = v.strip_prefix('=').or_else(|| v.strip_prefix('#'))
            {
                return Some(v.to_string());
            }
        }
    }
    None
}

/// Reads infocmp's escapes (`\E`, `^G`, `\n`, `\017`…) and drops `$<…>` padding.
fn decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 < b.len() => {
                i += 1;
                match b[i] {
                    b'E' | b'e' => out.push(0x1b),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'b' => out.push(8),
                    d if d.is_ascii_digit() => {
                        let end = (i + 3).min(b.len());
                        let digits = &s[i..end];
                        out.push(u8::from_str_radix(digits, 8).unwrap_or(0));
                        i = end - 1;
                    }
                    c => out.push(c),
                }
                i += 1;
            }
            b'^' if i + 1 < b.len() => {
                out.push(b[i + 1] & 0x1f);
                i += 2;
            }
            b'$' if b.get(i + 1) == Some(&b'<') => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b'>')
                    .map_or(b.len(), |p| i + p + 1);
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// terminfo's parameter language, for the forms the built-in entries use and a little
/// more: `%p1 %d %c %s %i %{n} %'c' %+ %- %* %/ %m %< %> %= %? %t %e %;`.
fn tparm(s: &[u8], params: &[i64]) -> Vec<u8> {
    let mut p = [0i64; 9];
    for (slot, v) in p.iter_mut().zip(params) {
        *slot = *v;
    }
    let mut out = Vec::new();
    let mut stack: Vec<i64> = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'%' {
            out.push(s[i]);
            i += 1;
            continue;
        }
        i += 1;
        let Some(&c) = s.get(i) else { break };
        i += 1;
        match c {
            b'%' => out.push(b'%'),
            b'd' => out.extend(stack.pop().unwrap_or(0).to_string().bytes()),
            b'c' => out.push(stack.pop().unwrap_or(0) as u8),
            b's' => out.extend(stack.pop().unwrap_or(0).to_string().bytes()),
            b'p' => {
                let n = s.get(i).map_or(0, |d| usize::from(d.saturating_sub(b'1')));
                stack.push(p.get(n).copied().unwrap_or(0));
                i += 1;
            }
            b'i' => {
                p[0] += 1;
                p[1] += 1;
            }
            b'{' => {
                let end = s[i..]
                    .iter()
                    .position(|&c| c == b'}')
                    .map_or(s.len(), |e| i + e);
                let n = std::str::from_utf8(&s[i..end])
                    .ok()
                    .and_then(|t| t.parse().ok());
                stack.push(n.unwrap_or(0));
                i = end + 1;
            }
            b'\'' => {
                stack.push(i64::from(s.get(i).copied().unwrap_or(0)));
                i += 2;
            }
            b'+' | b'-' | b'*' | b'/' | b'm' | b'<' | b'>' | b'=' => {
                let b = stack.pop().unwrap_or(0);
                let a = stack.pop().unwrap_or(0);
                stack.push(match c {
                    b'+' => a.wrapping_add(b),
                    b'-' => a.wrapping_sub(b),
                    b'*' => a.wrapping_mul(b),
                    b'/' => a.checked_div(b).unwrap_or(0),
                    b'm' => a.checked_rem(b).unwrap_or(0),
                    b'<' => i64::from(a < b),
                    b'>' => i64::from(a > b),
                    _ => i64::from(a == b),
                });
            }
            b'?' | b';' => {}
            // A false condition skips to the matching %e or %; at this nesting level.
            b't' if stack.pop().unwrap_or(0) == 0 => i = skip_branch(s, i, true),
            b't' => {}
            b'e' => i = skip_branch(s, i, false),
            _ => {}
        }
    }
    out
}

/// From just after `%t` (or `%e`), the index past the `%e` (when `else_ok`) or `%;`
/// that ends the branch at this nesting level.
fn skip_branch(s: &[u8], mut i: usize, else_ok: bool) -> usize {
    let mut depth = 0;
    while i + 1 < s.len() {
        if s[i] == b'%' {
            match s[i + 1] {
                b'?' => depth += 1,
                b';' if depth == 0 => return i + 2,
                b';' => depth -= 1,
                b'e' if depth == 0 && else_ok => return i + 2,
                _ => {}
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    s.len()
}

/// ncurses' usage text, after the complaint about an option (status 2).
const USAGE: &str = r#"Usage: tput [options] [command]

Options:
  -S <<       read commands from standard input
  -T TERM     use this instead of $TERM
  -V          print curses-version
  -x          do not try to clear scrollback

Commands:
  clear       clear the screen
  init        initialize the terminal
  reset       reinitialize the terminal
  capname     unlike clear/init/reset, print value for capability "capname"
"#;

pub struct Tput;

impl Tput {
    /// One capability with its parameters: the bytes to print, or the status.
    fn one(
        entry: &[&str],
        ctx: &Context,
        cap: &str,
        params: &[String],
        keep_scrollback: bool,
    ) -> Result<Vec<u8>, i32> {
        if BOOLEANS.contains(&cap) {
            return match lookup(entry, cap) {
                Some(_) => Ok(Vec::new()),
                None => Err(1),
            };
        }
        if NUMBERS.contains(&cap) {
            // The window's size: the environment's, the terminal's, then the entry's.
            let size = match cap {
                "cols" => ctx
                    .env
                    .get("COLUMNS")
                    .cloned()
                    .or_else(|| ctx.tty.map(|t| t.cols.to_string())),
                "lines" => ctx
                    .env
                    .get("LINES")
                    .cloned()
                    .or_else(|| ctx.tty.map(|t| t.rows.to_string())),
                _ => None,
            };
            let n = size
                .filter(|s| s.parse::<u32>().is_ok_and(|n| n > 0))
                .or_else(|| lookup(entry, cap))
                .unwrap_or_else(|| match cap {
                    "cols" => "80".into(),
                    "lines" => "24".into(),
                    _ => "-1".into(),
                });
            return Ok(format!("{n}\n").into_bytes());
        }
        if !STRINGS.contains(&cap) {
            return Err(4);
        }
        let Some(raw) = lookup(entry, cap) else {
            return Err(1);
        };
        let mut bytes = decode(&raw);
        if cap == "clear"
            && !keep_scrollback
            && let Some(e3) = lookup(entry, "E3")
        {
            // ncurses' clear also erases the scroll-back where the terminal can (E3).
            bytes.extend(decode(&e3));
        }
        if params.is_empty() {
            return Ok(bytes);
        }
        let nums: Vec<i64> = params
            .iter()
            .map(|p| p.trim().parse::<i64>().unwrap_or(0))
            .collect();
        Ok(tparm(&bytes, &nums))
    }
}

#[async_trait]
impl Command for Tput {
    fn name(&self) -> &'static str {
        "tput"
    }
    fn summary(&self) -> &'static str {
        "print terminal capabilities (colours, cursor movement, size)"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let mut args = args.as_slice();
        let mut term = ctx.env.get("TERM").cloned().unwrap_or_default();
        let mut script = false;
        let mut keep_scrollback = false;
        while let Some(a) = args.first() {
            if let Some(t) = a.strip_prefix("-T") {
                if t.is_empty() {
                    let Some(t) = args.get(1) else {
                        let msg = format!("tput: option requires an argument -- 'T'\n{USAGE}");
                        ctx.err(msg).await;
                        return Ok(2);
                    };
                    term = t.clone();
                    args = &args[2..];
                } else {
                    term = t.to_string();
                    args = &args[1..];
                }
            } else if a == "-x" {
                keep_scrollback = true;
                args = &args[1..];
            } else if a == "-S" {
                script = true;
                args = &args[1..];
            } else if a == "-V" {
                ctx.out("ncurses 6.4 (forkbox)\n").await?;
                return Ok(0);
            } else if a == "--" {
                args = &args[1..];
                break;
            } else if a.starts_with('-') && a.len() > 1 {
                let c = a.chars().nth(1).unwrap_or('?');
                ctx.err(format!("tput: invalid option -- '{c}'\n{USAGE}"))
                    .await;
                return Ok(2);
            } else {
                break;
            }
        }
        if term.is_empty() {
            ctx.err("tput: No value for $TERM and no -T specified\n")
                .await;
            return Ok(2);
        }
        let Some(entry) = entry(&term) else {
            ctx.err(format!("tput: unknown terminal \"{term}\"\n"))
                .await;
            return Ok(3);
        };
        // Each line of standard input is one capability with its parameters (-S), or
        // the operands are one.
        let mut requests: Vec<Vec<String>> = Vec::new();
        if script {
            let mut charge = ctx.budget.empty_charge();
            let text = super::util::Reader::stdin(ctx)
                .read_to_end(1 << 20, &mut charge)
                .await?
                .unwrap_or_default();
            for line in String::from_utf8_lossy(&text).lines() {
                let words: Vec<String> = line.split_whitespace().map(String::from).collect();
                if !words.is_empty() {
                    requests.push(words);
                }
            }
        } else if args.is_empty() {
            ctx.err(USAGE).await;
            return Ok(2);
        } else {
            requests.push(args.to_vec());
        }
        let mut out = Vec::new();
        let mut status = 0;
        for req in &requests {
            match Tput::one(entry, ctx, &req[0], &req[1..], keep_scrollback) {
                Ok(bytes) => out.extend(bytes),
                Err(4) => {
                    ctx.out(&out).await?;
                    let cap = &req[0];
                    ctx.err(format!("tput: unknown terminfo capability '{cap}'\n"))
                        .await;
                    return Ok(4);
                }
                Err(st) => status = st,
            }
        }
        ctx.out(out).await?;
        Ok(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    fn term(t: &str) -> Invocation {
        let mut inv = Invocation::default();
        inv.env.insert("TERM".into(), t.into());
        inv
    }

    #[test]
    fn tparm_reads_the_parameter_language() {
        let setaf = decode(r"\E[%?%p1%{8}%<%t3%p1%d%e%p1%{16}%<%t9%p1%{8}%-%d%e38;5;%p1%d%;m");
        assert_eq!(tparm(&setaf, &[1]), b"\x1b[31m");
        assert_eq!(tparm(&setaf, &[9]), b"\x1b[91m");
        assert_eq!(tparm(&setaf, &[100]), b"\x1b[38;5;100m");
        assert_eq!(tparm(&decode(r"\E[%i%p1%d;%p2%dH"), &[2, 3]), b"\x1b[3;4H");
        assert_eq!(decode(r"\E[m\017$<2>"), b"\x1b[m\x0f");
    }

    #[tokio::test]
    async fn capabilities_by_terminal() {
        assert_eq!(
            term("xterm").run(&Tput, &["setaf", "1"]).await.1,
            "\x1b[31m"
        );
        assert_eq!(term("xterm").run(&Tput, &["colors"]).await.1, "8\n");
        assert_eq!(
            term("xterm-256color").run(&Tput, &["colors"]).await.1,
            "256\n"
        );
        assert_eq!(term("screen").run(&Tput, &["sgr0"]).await.1, "\x1b[m\x0f");
        assert_eq!(
            term("xterm").run(&Tput, &["clear"]).await.1,
            "\x1b[H\x1b[2J\x1b[3J"
        );
        assert_eq!(term("vt100").run(&Tput, &["setaf", "1"]).await.0, 1);
        let (st, _, err) = term("xterm").run(&Tput, &["foo"]).await;
        assert_eq!(
            (st, err.as_str()),
            (4, "tput: unknown terminfo capability 'foo'\n")
        );
        let (st, _, err) = term("nosuch").run(&Tput, &["bold"]).await;
        assert_eq!(
            (st, err.as_str()),
            (3, "tput: unknown terminal \"nosuch\"\n")
        );
        let (st, _, err) = Invocation::default().run(&Tput, &["bold"]).await;
        assert_eq!(
            (st, err.as_str()),
            (2, "tput: No value for $TERM and no -T specified\n")
        );
    }
}
