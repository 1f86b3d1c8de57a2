//! PE = MPI rank, held wherever oneside can check it. At `shmem_init`,
//! before any road to the launcher is taken ([`check_launch`]): the
//! program's MPI ([`MpiLibrary`]) against the launcher that started the
//! process ([`Launcher`]). An MPI that cannot join that launcher's job (Open
//! MPI under Hydra, MPICH under `mpirun`) would run every rank alone as a
//! singleton, so the rank stops, whether MPI is initialized yet or not; an
//! initialized MPI whose `MPI_COMM_WORLD` is not the launcher's job stops
//! it too. After wire-up and again at finalize ([`check_world`]): an active
//! MPI's world against OpenSHMEM's. Each message names the launcher, the
//! MPI, and what to type ([`super::mpi_advice`]).
//!
//! A job the launcher says has one rank is let be: MPI's singleton is the
//! whole job, and every answer agrees.

use super::in_mpi;
use super::launcher::{Launcher, Size};
use super::mpi_advice::{cannot_join, what_to_do};
use super::mpi_library::MpiLibrary;
use crate::error::{Error, Result};

/// At init, before wire-up: stops a rank whose MPI cannot join the job
/// its launcher started, or whose active MPI sees another job.
pub(crate) fn check_launch() -> Result<()> {
    let Some(mpi) = MpiLibrary::found() else {
        return Ok(());
    };
    let Some(launcher) = Launcher::at_start() else {
        return Ok(());
    };
    launch_verdict(&mpi, &launcher, in_mpi::world(), in_mpi::finalized()).map_or(Ok(()), Err)
}

/// [`check_launch`]'s decision, from what was found.
pub(crate) fn launch_verdict(
    mpi: &MpiLibrary,
    launcher: &Launcher,
    world: Option<(usize, usize)>,
    finalized: bool,
) -> Option<Error> {
    let cannot = cannot_join(mpi, launcher);
    let mpi_says = match world {
        Some((rank, size)) if disagrees(launcher, rank, size) => {
            format!("is MPI_COMM_WORLD rank {rank} of {size} in {}", mpi.describe())
        }
        Some(_) => return None,
        None if finalized || launcher.alone() || cannot.is_none() => return None,
        None => format!(
            "runs {}, whose MPI_Init would make it MPI_COMM_WORLD rank 0 of 1",
            mpi.describe()
        ),
    };
    Some(Error::MpiMismatch {
        rank: launcher.rank,
        size: match launcher.size {
            Some(Size::Exactly(n)) => Some(n),
            _ => None,
        },
        how: format!("started by {}", launcher.describe()),
        mpi_says: format!(
            "{mpi_says}: {}",
            cannot.unwrap_or_else(|| format!("MPI and {} see different jobs", launcher.name()))
        ),
        what_to_do: what_to_do(mpi.family, launcher),
    })
}

/// Holds a PE number to the promise once wired up, and at finalize: equal
/// to the `MPI_COMM_WORLD` rank, in a world of the same size, whenever MPI
/// is active. `joined` says how this rank joined its job ([`joined`]).
pub(crate) fn check_world(rank: usize, size: usize, joined: &str) -> Result<()> {
    let Some((mpi_rank, mpi_size)) = in_mpi::world() else {
        return Ok(());
    };
    if (mpi_rank, mpi_size) == (rank, size) {
        return Ok(());
    }
    let mpi = MpiLibrary::found();
    let launcher = Launcher::at_start();
    let (why, what_to_do) = match (&mpi, &launcher) {
        (Some(mpi), Some(l)) => (
            cannot_join(mpi, l).unwrap_or_else(|| "OpenSHMEM and MPI see different jobs".into()),
            what_to_do(mpi.family, l),
        ),
        _ => (
            "OpenSHMEM and MPI see different jobs".into(),
            "start the program with its own MPI's launcher (`mpiexec.hydra` for MPICH, `mpirun` for Open MPI, \
             `srun`), through which oneside wires up too"
                .into(),
        ),
    };
    let in_mpi = mpi.map(|m| format!(" in {}", m.describe())).unwrap_or_default();
    Err(Error::MpiMismatch {
        rank: Some(rank),
        size: Some(size),
        how: joined.to_string(),
        mpi_says: format!("is MPI_COMM_WORLD rank {mpi_rank} of {mpi_size}{in_mpi}: {why}"),
        what_to_do,
    })
}

/// How a singleton joined its job, for [`check_world`]'s message.
pub(crate) const ALONE: &str = "no launcher, as a singleton";

/// How this rank joined its job, for [`check_world`]'s message: through
/// rlaunch (`None`) or a PMI server (its words), started by the launcher
/// named at start.
pub(crate) fn joined(server: Option<String>) -> String {
    match (server, Launcher::at_start()) {
        (None, _) => "joined through rlaunch".into(),
        (Some(s), Some(l)) => format!("joined through {s}, started by {}", l.name()),
        (Some(s), None) => format!("joined through {s}"),
    }
}

/// The launcher's variables disagree with MPI's world.
fn disagrees(launcher: &Launcher, rank: usize, size: usize) -> bool {
    let size_differs = match launcher.size {
        Some(Size::Exactly(n)) => n != size,
        Some(Size::AtLeast(n)) => size < n,
        None => false,
    };
    size_differs || launcher.rank.is_some_and(|r| r != rank)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::mpi_advice::tests::{launcher, library, HYDRA, MPIRUN};
    use crate::bootstrap::mpi_library::Family;

    fn message(e: Option<Error>) -> String {
        e.map(|e| e.to_string()).unwrap_or_default()
    }

    #[test]
    fn an_mpi_that_cannot_join_stops_before_mpi_init() {
        let said = message(launch_verdict(&library(Family::OpenMpi), &launcher(HYDRA), None, false));
        for part in [
            "rank 3 of 4 (started by mpiexec.hydra, which set PMI_RANK=3, PMI_SIZE=4, PMI_FD=6)",
            "runs Open MPI v4.1.4, whose MPI_Init would make it MPI_COMM_WORLD rank 0 of 1",
            "Open MPI joins a job only through a PMIx server",
            "any answer mixing MPI and OpenSHMEM would be wrong",
            "for `mpiexec.hydra`, or run with",
        ] {
            assert!(said.contains(part), "{part:?} missing from: {said}");
        }
        let said = message(launch_verdict(&library(Family::Mpich), &launcher(MPIRUN), None, false));
        assert!(
            said.contains("runs MPICH 4.0.2") && said.contains("Open MPI's mpirun"),
            "{said}"
        );
    }

    #[test]
    fn an_active_mpi_is_held_to_the_launchers_job() {
        let (ompi, mpich) = (library(Family::OpenMpi), library(Family::Mpich));
        let said = message(launch_verdict(&ompi, &launcher(HYDRA), Some((0, 1)), false));
        assert!(
            said.contains("is MPI_COMM_WORLD rank 0 of 1 in Open MPI v4.1.4: Open MPI joins"),
            "{said}"
        );
        // MPICH under Hydra that somehow sees another job: said so, too.
        let said = message(launch_verdict(&mpich, &launcher(HYDRA), Some((0, 2)), false));
        assert!(said.contains("MPI and mpiexec.hydra see different jobs"), "{said}");
        assert!(launch_verdict(&mpich, &launcher(HYDRA), Some((3, 4)), false).is_none());
        // An MPI that joined, though it looked as if it could not, is let be.
        assert!(launch_verdict(&ompi, &launcher(HYDRA), Some((3, 4)), false).is_none());
    }

    #[test]
    fn one_rank_jobs_and_finalized_mpis_are_let_be() {
        let one = launcher(&[
            ("PMI_FD", "6"),
            ("PMI_RANK", "0"),
            ("PMI_SIZE", "1"),
            ("HYDI_CONTROL_FD", "7"),
        ]);
        let ompi = library(Family::OpenMpi);
        assert!(launch_verdict(&ompi, &one, None, false).is_none());
        assert!(launch_verdict(&ompi, &one, Some((0, 1)), false).is_none());
        assert!(launch_verdict(&ompi, &launcher(HYDRA), None, true).is_none());
    }

    #[test]
    fn hydra_with_pmi_port_tells_a_lower_bound() {
        let port = launcher(&[("PMI_PORT", "vm:1"), ("PMI_ID", "1"), ("MPI_LOCALNRANKS", "2")]);
        let ompi = library(Family::OpenMpi);
        let said = message(launch_verdict(&ompi, &port, Some((0, 1)), false));
        assert!(said.contains("rank 1 (started by mpiexec.hydra -pmi-port"), "{said}");
        assert!(launch_verdict(&library(Family::Mpich), &port, Some((1, 4)), false).is_none());
    }
}
