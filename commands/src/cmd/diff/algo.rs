//! The edit script of `diff`: Myers' shortest edit script over line keys, then GNU's
//! sliding of change runs, then the runs as [`Change`]s.

use crate::{Context, Interrupt};

/// Cost past which the search for a middle snake settles for the furthest-reaching
/// diagonal instead of the optimum, bounding the work on very different files (GNU has
/// the same kind of bound).
const TOO_EXPENSIVE: usize = 4096;

/// Marks in `ca`/`cb` the lines of a shortest edit script between `a` and `b`: Myers'
/// linear-space divide and conquer around middle snakes, preferring deletions on ties
/// as GNU does. Ranges wait on an explicit stack, so no input can deepen the call stack.
pub(super) async fn myers(
    ctx: &Context,
    a: &[usize],
    b: &[usize],
    ca: &mut [bool],
    cb: &mut [bool],
) -> Result<(), Interrupt> {
    let size = a.len() + b.len() + 3;
    let off = b.len() as i64 + 1;
    let mut fd = vec![0i64; size];
    let mut bd = vec![0i64; size];
    let mut todo = vec![(0usize, a.len(), 0usize, b.len())];
    let mut pacer = super::super::util::Pacer::default();
    while let Some((mut x0, mut x1, mut y0, mut y1)) = todo.pop() {
        pacer.tick(ctx).await?;
        while x0 < x1 && y0 < y1 && a[x0] == b[y0] {
            x0 += 1;
            y0 += 1;
        }
        while x1 > x0 && y1 > y0 && a[x1 - 1] == b[y1 - 1] {
            x1 -= 1;
            y1 -= 1;
        }
        if x0 == x1 {
            cb[y0..y1].fill(true);
            continue;
        }
        if y0 == y1 {
            ca[x0..x1].fill(true);
            continue;
        }
        let (xm, ym) = middle_snake(a, b, (x0, x1, y0, y1), off, &mut fd, &mut bd);
        todo.push((xm, x1, ym, y1));
        todo.push((x0, xm, y0, ym));
    }
    Ok(())
}

/// A point on a shortest path from `(x0, y0)` to `(x1, y1)` that splits it in two.
fn middle_snake(
    a: &[usize],
    b: &[usize],
    (x0, x1, y0, y1): (usize, usize, usize, usize),
    off: i64,
    fd: &mut [i64],
    bd: &mut [i64],
) -> (usize, usize) {
    let (x0, x1, y0, y1) = (x0 as i64, x1 as i64, y0 as i64, y1 as i64);
    let ix = |d: i64| (d + off) as usize;
    let dmin = x0 - y1;
    let dmax = x1 - y0;
    let fmid = x0 - y0;
    let bmid = x1 - y1;
    let odd = (fmid - bmid) & 1 != 0;
    let (mut fmin, mut fmax, mut bmin, mut bmax) = (fmid, fmid, bmid, bmid);
    fd[ix(fmid)] = x0;
    bd[ix(bmid)] = x1;
    let mut cost = 0usize;
    loop {
        cost += 1;
        if fmin > dmin {
            fmin -= 1;
            fd[ix(fmin - 1)] = -1;
        } else {
            fmin += 1;
        }
        if fmax < dmax {
            fmax += 1;
            fd[ix(fmax + 1)] = -1;
        } else {
            fmax -= 1;
        }
        let mut d = fmax;
        while d >= fmin {
            let (lo, hi) = (fd[ix(d - 1)], fd[ix(d + 1)]);
            let mut x = if lo >= hi { lo + 1 } else { hi };
            let mut y = x - d;
            while x < x1 && y < y1 && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            fd[ix(d)] = x;
            if odd && bmin <= d && d <= bmax && bd[ix(d)] <= x {
                return (x as usize, y as usize);
            }
            d -= 2;
        }
        if bmin > dmin {
            bmin -= 1;
            bd[ix(bmin - 1)] = i64::MAX;
        } else {
            bmin += 1;
        }
        if bmax < dmax {
            bmax += 1;
            bd[ix(bmax + 1)] = i64::MAX;
        } else {
            bmax -= 1;
        }
        let mut d = bmax;
        while d >= bmin {
            let (lo, hi) = (bd[ix(d - 1)], bd[ix(d + 1)]);
            let mut x = if lo < hi { lo } else { hi - 1 };
            let mut y = x - d;
            while x > x0 && y > y0 && a[x as usize - 1] == b[y as usize - 1] {
                x -= 1;
                y -= 1;
            }
            bd[ix(d)] = x;
            if !odd && fmin <= d && d <= fmax && x <= fd[ix(d)] {
                return (x as usize, y as usize);
            }
            d -= 2;
        }
        if cost >= TOO_EXPENSIVE {
            // Settle for the forward diagonal that got furthest (largest x + y).
            let mut best = (x0, y0);
            let mut d = fmax;
            while d >= fmin {
                let x = fd[ix(d)].min(x1);
                let y = x - d;
                if (y0..=y1).contains(&y) && x + y > best.0 + best.1 {
                    best = (x, y);
                }
                d -= 2;
            }
            if best == (x0, y0) || best == (x1, y1) {
                best = (x0 + 1, y0);
            }
            return (best.0 as usize, best.1 as usize);
        }
    }
}

/// One change: lines `a..a_end` of the old file replaced by `b..b_end` of the new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Change {
    pub(super) a: usize,
    pub(super) a_end: usize,
    pub(super) b: usize,
    pub(super) b_end: usize,
    /// Every line it deletes or inserts is one `-B`/`-I` ignore (GNU's `ignore` mark).
    pub(super) ignore: bool,
}

/// Slides each run of changed lines of one file (flags `ch`, keys `k`) the way GNU does:
/// up as far as equal lines allow, merging with runs it meets, then down as far as they
/// allow, and finally back up to the last place where it sat against a change of the other
/// file (`other`), so insertions and deletions pair up into one hunk.
pub(super) fn shift(k: &[usize], ch: &mut [bool], other: &[bool]) {
    let n = k.len();
    // Unchanged-line counts at which the other file has a change.
    let mut other_at = Vec::new();
    let mut unchanged = 0usize;
    let mut prev_changed = false;
    for &c in other {
        if c {
            if !prev_changed {
                other_at.push(unchanged);
            }
        } else {
            unchanged += 1;
        }
        prev_changed = c;
    }
    let aligned = |u: usize| other_at.binary_search(&u).is_ok();
    let mut i = 0;
    // Unchanged lines of this file before `i`.
    let mut u = 0usize;
    while i < n {
        if !ch[i] {
            i += 1;
            u += 1;
            continue;
        }
        let mut start = i;
        let mut end = i;
        while end < n && ch[end] {
            end += 1;
        }
        loop {
            let len = end - start;
            while start > 0 && k[start - 1] == k[end - 1] {
                start -= 1;
                end -= 1;
                ch[start] = true;
                ch[end] = false;
                u -= 1;
                while start > 0 && ch[start - 1] {
                    start -= 1;
                }
            }
            let mut best = if aligned(u) { Some(end) } else { None };
            while end < n && k[start] == k[end] {
                ch[start] = false;
                ch[end] = true;
                start += 1;
                end += 1;
                u += 1;
                while end < n && ch[end] {
                    end += 1;
                }
                if aligned(u) {
                    best = Some(end);
                }
            }
            if end - start == len {
                if let Some(b) = best {
                    while end > b {
                        start -= 1;
                        end -= 1;
                        ch[start] = true;
                        ch[end] = false;
                        u -= 1;
                    }
                }
                break;
            }
        }
        i = end;
    }
}

/// The changes as runs over both files walked together.
pub(super) fn runs(ca: &[bool], cb: &[bool]) -> Vec<Change> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < ca.len() || j < cb.len() {
        let da = i < ca.len() && ca[i];
        let db = j < cb.len() && cb[j];
        if !da && !db {
            i += 1;
            j += 1;
            continue;
        }
        let (a, b) = (i, j);
        while i < ca.len() && ca[i] {
            i += 1;
        }
        while j < cb.len() && cb[j] {
            j += 1;
        }
        out.push(Change {
            a,
            a_end: i,
            b,
            b_end: j,
            ignore: false,
        });
    }
    out
}
