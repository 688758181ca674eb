//! Arguments, environment, clocks, randomness, exit, yield; sockets are refused.

use std::time::SystemTime;

use wasmtime::{Caller, Linker};

use super::abi::{Errno, clock, nanos};
use super::{GuestExit, Host, HostResult, MODULE, finish, ptr, split};

/// Writes a NUL-separated string list (`argv` or `environ`): pointers at `ptrs`, bytes
/// at `buf`.
fn put_list(caller: &mut Caller<'_, Host>, env: bool, ptrs: u32, buf: u32) -> HostResult {
    let (mut mem, host) = split(caller)?;
    let list = if env { &host.env } else { &host.args };
    let mut at = buf;
    for (i, item) in list.iter().enumerate() {
        mem.put_u32(ptrs + 4 * i as u32, at)?;
        mem.write(at, item)?;
        mem.write(at + item.len() as u32, &[0])?;
        at = at
            .checked_add(item.len() as u32 + 1)
            .ok_or(Errno::OVERFLOW)?;
    }
    Ok(())
}

/// Writes how many strings a list has and the bytes they take with their NULs.
fn put_sizes(caller: &mut Caller<'_, Host>, env: bool, count: u32, size: u32) -> HostResult {
    let (mut mem, host) = split(caller)?;
    let list = if env { &host.env } else { &host.args };
    let bytes: usize = list.iter().map(|s| s.len() + 1).sum();
    mem.put_u32(count, list.len() as u32)?;
    mem.put_u32(size, u32::try_from(bytes).map_err(|_| Errno::OVERFLOW)?)?;
    Ok(())
}

/// The time of clock `id` in nanoseconds.
fn now(host: &Host, id: u32) -> Result<u64, Errno> {
    match id {
        clock::REALTIME => Ok(nanos(SystemTime::now())),
        // Guests only compare monotonic readings; counting from the guest's start keeps
        // them small and says nothing of the host's uptime.
        clock::MONOTONIC | clock::PROCESS_CPUTIME | clock::THREAD_CPUTIME => {
            Ok(u64::try_from(host.start.elapsed().as_nanos()).unwrap_or(u64::MAX))
        }
        _ => Err(Errno::INVAL),
    }
}

pub fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "args_get",
        |mut c: Caller<'_, Host>, argv: i32, buf: i32| {
            finish(put_list(&mut c, false, ptr(argv), ptr(buf)))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "args_sizes_get",
        |mut c: Caller<'_, Host>, count: i32, size: i32| {
            finish(put_sizes(&mut c, false, ptr(count), ptr(size)))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_get",
        |mut c: Caller<'_, Host>, env: i32, buf: i32| {
            finish(put_list(&mut c, true, ptr(env), ptr(buf)))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "environ_sizes_get",
        |mut c: Caller<'_, Host>, count: i32, size: i32| {
            finish(put_sizes(&mut c, true, ptr(count), ptr(size)))
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: Caller<'_, Host>, id: i32, out: i32| {
            finish((|| {
                let (mut mem, _) = split(&mut c)?;
                let res = match id as u32 {
                    clock::REALTIME
                    | clock::MONOTONIC
                    | clock::PROCESS_CPUTIME
                    | clock::THREAD_CPUTIME => 1u64,
                    _ => return Err(Errno::INVAL.into()),
                };
                mem.put_u64(ptr(out), res)?;
                Ok(())
            })())
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_time_get",
        |mut c: Caller<'_, Host>, id: i32, _precision: i64, out: i32| {
            finish((|| {
                let (mut mem, host) = split(&mut c)?;
                let t = now(host, id as u32)?;
                mem.put_u64(ptr(out), t)?;
                Ok(())
            })())
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        |mut c: Caller<'_, Host>, buf: i32, len: i32| {
            finish((|| {
                let (mut mem, _) = split(&mut c)?;
                rand::fill(mem.slice_mut(ptr(buf), ptr(len) as usize)?);
                Ok(())
            })())
        },
    )?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_c: Caller<'_, Host>, code: i32| -> wasmtime::Result<()> {
            Err(wasmtime::Error::new(GuestExit::Exit(code as u32)))
        },
    )?;
    linker.func_wrap(MODULE, "proc_raise", |_c: Caller<'_, Host>, _sig: i32| {
        i32::from(Errno::NOSYS.0)
    })?;
    linker.func_wrap_async(MODULE, "sched_yield", |_c: Caller<'_, Host>, (): ()| {
        Box::new(async move {
            tokio::task::yield_now().await;
            wasmtime::Result::<i32>::Ok(0)
        })
    })?;
    // No guest has a socket (DESIGN.md): every socket call is "not supported".
    linker.func_wrap(
        MODULE,
        "sock_accept",
        |_c: Caller<'_, Host>, _fd: i32, _flags: i32, _out: i32| i32::from(Errno::NOTSUP.0),
    )?;
    linker.func_wrap(
        MODULE,
        "sock_recv",
        |_c: Caller<'_, Host>, _fd: i32, _iovs: i32, _n: i32, _fl: i32, _got: i32, _ofl: i32| {
            i32::from(Errno::NOTSUP.0)
        },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_send",
        |_c: Caller<'_, Host>, _fd: i32, _iovs: i32, _n: i32, _fl: i32, _sent: i32| {
            i32::from(Errno::NOTSUP.0)
        },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_shutdown",
        |_c: Caller<'_, Host>, _fd: i32, _how: i32| i32::from(Errno::NOTSUP.0),
    )?;
    Ok(())
}
