//! `rlaunch`: parse the arguments, build the launch plan, run the job.
//! Every error ends as one line on stderr and a non-zero exit status.

mod alloc;
mod check;
mod cli;
mod cpus;
mod dry_run;
mod elf_needed;
mod error;
mod foreign;
#[cfg(test)]
mod fuzz;
mod hostfile;
mod job;
mod known_hosts;
mod manpage;
mod plan;
mod profile;
mod proxy;
mod spawner;
mod sync;
mod words;

use std::process::ExitCode;

fn main() -> ExitCode {
    // One host's agent under ssh or srun: not a user-facing mode.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--proxy") {
        let rest: Vec<String> = std::env::args().skip(2).collect();
        return ExitCode::from(proxy::run(&rest));
    }
    // The small process that starts a host's ranks: not a user-facing mode.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--spawner") {
        return ExitCode::from(spawner::serve::run());
    }
    // A host's side of `rlaunch --check`: not a user-facing mode either.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--probe") {
        let rest: Vec<String> = std::env::args().skip(2).collect();
        return ExitCode::from(check::probe(&rest));
    }
    // `make install`'s man pages: not a user-facing mode either.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--print-man") {
        let name = std::env::args().nth(2).unwrap_or_default();
        return match manpage::render(&name) {
            Some(page) => {
                use std::io::Write;
                let written = std::io::stdout().write_all(&page);
                ExitCode::from(u8::from(written.is_err()))
            }
            None => {
                eprintln!("rlaunch: --print-man takes one of {}", manpage::PAGES.join(", "));
                ExitCode::from(2)
            }
        };
    }
    let args = match cli::parse(std::env::args_os()) {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let (dry_run, doctor) = (args.dry_run, args.check);
    let result = plan::LaunchPlan::from_args(args).and_then(|plan| {
        if doctor {
            return check::run(&plan);
        }
        if dry_run {
            print!("{}", dry_run::describe(&plan));
            return Ok(0);
        }
        run_job(&plan)
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("rlaunch: error: {}", error_chain(&e));
            ExitCode::from(1)
        }
    }
}

/// Runs the job, and merges its profiles and timelines after it when
/// `--profile` or `--trace` asked.
fn run_job(plan: &plan::LaunchPlan) -> Result<u8, error::LaunchError> {
    let unwritable = |dir: &std::path::Path| {
        let dir = dir.to_path_buf();
        move |source| error::LaunchError::Profile { dir, source }
    };
    for dir in plan.profile.iter().chain(&plan.trace) {
        profile::prepare(dir).map_err(unwritable(dir))?;
    }
    if let Some(warning) = foreign::warning(&plan.program) {
        eprintln!("rlaunch: {warning}");
    }
    let code = job::run(plan)?;
    let size = plan.ranks.len();
    if let Some(dir) = &plan.profile {
        profile::report(dir, size).map_err(unwritable(dir))?;
    }
    if let Some(dir) = &plan.trace {
        let (_, line) = profile::timeline::write(dir, size).map_err(unwritable(dir))?;
        eprint!("{line}");
    }
    Ok(code)
}

/// "outer: inner: innermost", skipping causes already quoted by their parent.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text = format!("{text}: {cause_text}");
        }
        source = cause.source();
    }
    text
}
