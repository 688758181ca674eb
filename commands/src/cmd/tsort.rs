//! `tsort`: topological sort of the partial order given as pairs of tokens. The input is
//! read whole (charged to the session's budget). The order among independent items is
//! GNU's: items that have no predecessor in name order, then a queue, each item's
//! successors in the reverse order of their pairs.

use std::collections::BTreeMap;

use async_trait::async_trait;
use clap::Parser;

use super::textin::slurp;
use crate::{CmdResult, Command, Context, parse_args};

/// Write totally ordered list consistent with the partial ordering in FILE. With no
/// FILE, or when FILE is -, read standard input.
#[derive(Parser, Debug)]
#[command(name = "tsort")]
struct Args {
    /// FILE
    files: Vec<String>,
}

#[derive(Default)]
struct Node {
    indegree: usize,
    /// Successors, most recent pair first.
    succ: Vec<usize>,
}

/// The order, and the loops found (each as its members) on the way.
fn sort<'t>(tokens: &[&'t [u8]]) -> (Vec<usize>, Vec<Vec<usize>>, Vec<Vec<u8>>) {
    let mut ids: BTreeMap<&'t [u8], usize> = BTreeMap::new();
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut id = |t: &'t [u8], nodes: &mut Vec<Node>| -> usize {
        *ids.entry(t).or_insert_with(|| {
            names.push(t.to_vec());
            nodes.push(Node::default());
            nodes.len() - 1
        })
    };
    for pair in tokens.chunks(2) {
        let a = id(pair[0], &mut nodes);
        let b = id(pair[1], &mut nodes);
        if a != b {
            nodes[a].succ.insert(0, b);
            nodes[b].indegree += 1;
        }
    }
    let sorted_ids: Vec<usize> = ids.values().copied().collect();
    let mut done = vec![false; nodes.len()];
    let mut order = Vec::with_capacity(nodes.len());
    let mut loops = Vec::new();
    let mut queue: std::collections::VecDeque<usize> = sorted_ids
        .iter()
        .copied()
        .filter(|i| nodes[*i].indegree == 0)
        .collect();
    loop {
        while let Some(n) = queue.pop_front() {
            done[n] = true;
            order.push(n);
            let succ = std::mem::take(&mut nodes[n].succ);
            for s in succ {
                nodes[s].indegree -= 1;
                if nodes[s].indegree == 0 {
                    queue.push_back(s);
                }
            }
        }
        // Stuck: the rest is in loops. Report one and break its closing edge.
        let Some(start) = sorted_ids.iter().copied().find(|i| !done[*i]) else {
            break;
        };
        // Every node left has a predecessor left, so walking back from one must close
        // a loop.
        let mut path = vec![start];
        let mut seen = vec![usize::MAX; nodes.len()];
        seen[start] = 0;
        let mut cur = start;
        let cycle = loop {
            let pred = sorted_ids
                .iter()
                .copied()
                .find(|p| !done[*p] && nodes[*p].succ.contains(&cur));
            let Some(p) = pred else {
                // Unreachable for a consistent graph; stop safely.
                break vec![cur];
            };
            if seen[p] != usize::MAX {
                let mut c = path[seen[p]..].to_vec();
                c.reverse();
                c.rotate_right(1);
                break c;
            }
            seen[p] = path.len();
            path.push(p);
            cur = p;
        };
        let (Some(&to), Some(&from)) = (cycle.first(), cycle.last()) else {
            break;
        };
        if cycle.len() == 1 {
            done[to] = true;
            order.push(to);
            continue;
        }
        loops.push(cycle);
        nodes[from].succ.retain(|s| *s != to);
        nodes[to].indegree -= 1;
        if nodes[to].indegree == 0 {
            queue.push_back(to);
        }
    }
    (order, loops, names)
}

pub struct Tsort;

#[async_trait]
impl Command for Tsort {
    fn name(&self) -> &'static str {
        "tsort"
    }
    fn summary(&self) -> &'static str {
        "perform topological sort"
    }
    async fn run(&self, ctx: &Context, args: Vec<String>) -> CmdResult {
        let args: Args = match parse_args(ctx, self.name(), &args).await {
            Ok(a) => a,
            Err(r) => return r,
        };
        if let Some(extra) = args.files.get(1) {
            ctx.err(format!(
                "tsort: extra operand '{extra}'\nTry 'tsort --help' for more information.\n"
            ))
            .await;
            return Ok(1);
        }
        let file = args.files.first().cloned().unwrap_or_else(|| "-".into());
        let mut charge = ctx.budget.empty_charge();
        let Some(data) = slurp(ctx, "tsort", &file, &mut charge).await? else {
            return Ok(1);
        };
        let tokens: Vec<&[u8]> = data
            .split(|b| b.is_ascii_whitespace())
            .filter(|t| !t.is_empty())
            .collect();
        if tokens.len() % 2 == 1 {
            ctx.warn(
                "tsort",
                format!("{file}: input contains an odd number of tokens"),
            )
            .await;
            return Ok(1);
        }
        charge.grow(tokens.len() * 96)?;
        ctx.checkpoint().await?;
        let (order, loops, names) = sort(&tokens);
        for l in &loops {
            let mut msg = format!("tsort: {file}: input contains a loop:\n");
            for n in l {
                msg.push_str(&format!("tsort: {}\n", String::from_utf8_lossy(&names[*n])));
            }
            ctx.err(msg).await;
        }
        let mut out = Vec::new();
        for n in order {
            out.extend_from_slice(&names[n]);
            out.push(b'\n');
        }
        ctx.out(out).await?;
        Ok(i32::from(!loops.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    async fn tsort(stdin: &str) -> (i32, String, String) {
        Invocation {
            stdin: stdin.as_bytes().to_vec(),
            ..Invocation::default()
        }
        .run(&Tsort, &[])
        .await
    }

    #[tokio::test]
    async fn orders_like_gnu() {
        assert_eq!(tsort("a b\na c\na d\n").await.1, "a\nd\nc\nb\n");
        assert_eq!(tsort("z y\nz x\nm n\n").await.1, "m\nz\nn\nx\ny\n");
        assert_eq!(tsort("c c\nb b\na b\n").await.1, "a\nc\nb\n");
    }

    #[tokio::test]
    async fn loops_and_odd_input() {
        let (st, out, err) = tsort("a b\nb c\nc a\nc d\n").await;
        assert_eq!((st, out.as_str()), (1, "a\nb\nc\nd\n"));
        assert_eq!(
            err,
            "tsort: -: input contains a loop:\ntsort: a\ntsort: b\ntsort: c\n"
        );
        let (st, out, err) = tsort("a b c").await;
        assert_eq!((st, out.as_str()), (1, ""));
        assert_eq!(err, "tsort: -: input contains an odd number of tokens\n");
    }
}
