//! Man pages (`rlaunch.1`, `oshrun.1`, `oshcc.1`) rendered with
//! `clap_mangen`. rlaunch's and oshrun's come from the very definition that
//! parses rlaunch's command line ([`cli::command`]), so they cannot drift
//! from it. oshcc passes its arguments to the C compiler and parses none
//! with clap; its page is rendered from the small definition below, which
//! lists the few options and variables oshcc itself reads.
//! `make install` writes them with the hidden `rlaunch --print-man NAME`.

use crate::cli;
use clap::{Arg, ArgAction, Command};

/// The pages `--print-man` knows.
pub const PAGES: [&str; 3] = ["rlaunch", "oshrun", "oshcc"];

/// The roff source of page `name`, or `None` for an unknown page.
pub fn render(name: &str) -> Option<Vec<u8>> {
    let command = match name {
        "rlaunch" => cli::command().after_help(ENVIRONMENT),
        "oshrun" => cli::command()
            .name("oshrun")
            .about("Start an OpenSHMEM job: oshrun is rlaunch under the OpenSHMEM name, with the same options")
            .after_help(ENVIRONMENT),
        "oshcc" => oshcc(),
        _ => return None,
    };
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page).ok()?;
    Some(page)
}

const ENVIRONMENT: &str = "Environment: ONESIDE_TRANSPORT, ONESIDE_HEAP_SIZE, ONESIDE_PROFILE, \
ONESIDE_HANG_TIMEOUT, ONESIDE_DEBUG, ONESIDE_OFI_PROVIDER (FI_PROVIDER is honoured too), \
ONESIDE_OFI_CQ_WAIT (fd, the default, or none: waits poll to serve peers). \
Inside a Slurm allocation (SLURM_JOB_NODELIST) or a PBS job (PBS_NODEFILE), rlaunch places \
ranks on the allocation's hosts without a hostfile. rlaunch starts itself on other hosts by \
its own absolute path, so an installation must be at the same path on every node. \
The user guide is in share/doc/oneside/ of the installation.";

/// oshcc's interface, as its own `main` implements it.
fn oshcc() -> Command {
    Command::new("oshcc")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Compile and link C programs against oneside's OpenSHMEM library")
        .long_about(
            "oshcc runs the C compiler with the given arguments, then -I<prefix>/include and, when \
             the command links, -L<prefix>/lib -Wl,-rpath,<prefix>/lib -loneside_shmem. The prefix \
             is found from oshcc's own location (symbolic links resolved), so an installation can \
             be moved. A program records the absolute library directory of the installation it \
             was linked against as its run path (as Open MPI's wrapper compilers do), so it \
             runs without LD_LIBRARY_PATH; moving the installation afterwards means relinking \
             or setting LD_LIBRARY_PATH, which is searched before the run path. \
             Called as oshc++ (a symbolic link), it compiles C++.",
        )
        .disable_version_flag(true)
        .disable_help_flag(true)
        .arg(
            Arg::new("show")
                .long("show")
                .visible_alias("showme")
                .action(ArgAction::SetTrue)
                .help("Print the compiler command instead of running it (also -show, -showme)"),
        )
        .arg(
            Arg::new("version")
                .long("version")
                .action(ArgAction::SetTrue)
                .help("Print oneside's version and transports, then the compiler's version"),
        )
        .arg(
            Arg::new("args")
                .value_name("COMPILER ARGS")
                .num_args(0..)
                .trailing_var_arg(true)
                .allow_hyphen_values(true)
                .help("Passed to the compiler unchanged"),
        )
        .after_help(
            "Environment: ONESIDE_CC (the C compiler, default cc; CC is never read, so that \
             configure scripts can run with CC=oshcc), ONESIDE_CXX (the C++ compiler for oshc++, \
             default c++), ONESIDE_SHMEM_INCLUDE (another include directory).",
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_renders_with_its_options() {
        let text = |name| String::from_utf8(render(name).unwrap()).unwrap();
        let rlaunch = text("rlaunch");
        assert!(
            rlaunch.starts_with(".ie") || rlaunch.contains(".TH rlaunch"),
            "{rlaunch}"
        );
        assert!(rlaunch.contains("hang\\-timeout") && rlaunch.contains("transports: shm"));
        assert!(text("oshrun").contains(".TH oshrun"));
        assert!(text("oshcc").contains("ONESIDE_CC"));
        assert!(render("mpirun").is_none());
    }
}
