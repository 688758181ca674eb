//! The `forkbox` binary: parse the command line, start logging, and hand over to the
//! library (`server::run` for `serve`, the shell for `exec`).

use std::process::ExitCode;

use forkbox::config::{Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("forkbox: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Serve(args) => {
                forkbox::telemetry::init_with("info", args.ops.log_format);
                forkbox::app::serve(*args).await.map(|()| 0)
            }
            Command::Exec(args) => {
                forkbox::telemetry::init("warn");
                forkbox::app::exec(args).await
            }
            Command::Snapshots(command) => {
                // What an operator reads: forkbox's warnings, dependencies' errors only.
                forkbox::telemetry::init("forkbox=warn,error");
                forkbox::app::snapshots(command).await
            }
            Command::Wasm(command) => {
                forkbox::telemetry::init("forkbox=warn,error");
                forkbox::app::wasm(command).await
            }
        }
    });
    // Whatever is still running is abandoned, not awaited: `exec`'s reader of this
    // process's stdin sits in a blocking read that ends only when the writer closes it, and
    // a script that is done must not wait for that (`sleep 9 | forkbox exec -c 'echo hi'`).
    runtime.shutdown_background();
    match result {
        Ok(status) => ExitCode::from((status & 0xff) as u8),
        Err(e) => {
            eprintln!("forkbox: {e:#}");
            ExitCode::from(1)
        }
    }
}
