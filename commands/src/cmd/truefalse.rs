//! `true` and `false`: do nothing, successfully or not. Like bash's builtins they take
//! no options (`true --help` is still just true).

use async_trait::async_trait;

use crate::{CmdResult, Command, Context};

pub struct True;
pub struct False;

#[async_trait]
impl Command for True {
    fn name(&self) -> &'static str {
        "true"
    }
    fn summary(&self) -> &'static str {
        "do nothing, successfully"
    }
    async fn run(&self, _ctx: &Context, _args: Vec<String>) -> CmdResult {
        Ok(0)
    }
}

#[async_trait]
impl Command for False {
    fn name(&self) -> &'static str {
        "false"
    }
    fn summary(&self) -> &'static str {
        "do nothing, unsuccessfully"
    }
    async fn run(&self, _ctx: &Context, _args: Vec<String>) -> CmdResult {
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Invocation;

    #[tokio::test]
    async fn statuses_and_no_output() {
        let inv = Invocation::default();
        assert_eq!(
            inv.run(&True, &["--help", "x"]).await,
            (0, String::new(), String::new())
        );
        assert_eq!(
            inv.run(&False, &[]).await,
            (1, String::new(), String::new())
        );
    }
}
