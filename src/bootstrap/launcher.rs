//! Which launcher started this process, as the environment it was started
//! with says: its name for messages, the PMI it offers (a PMIx server, a
//! PMI-1/2 socket on `PMI_FD` or `PMI_PORT`), and the job's size and this
//! process's rank as far as its variables tell them. The MPI check
//! ([`super::mpi_agree`]) holds the program's MPI to this.
//!
//! The variables are read from `/proc/self/environ`, the block the process
//! was started with, not from the live environment: an Open MPI singleton's
//! `MPI_Init` sets `PMIX_RANK` and `PMIX_SERVER_URI*` for its own PMIx
//! server in the process, which would otherwise read as `mpirun`.

use std::collections::HashMap;

/// A launcher family, as far as the environment tells them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Rlaunch,
    /// MPICH's `mpiexec.hydra` (`HYDI_CONTROL_FD`, `MPI_LOCALNRANKS`).
    Hydra,
    /// Open MPI's `mpirun` or `prterun` (`OMPI_COMM_WORLD_SIZE`).
    OpenMpi,
    Srun,
    Flux,
    Pals,
    /// A PMIx server of a launcher not named here.
    OtherPmix,
    /// A PMI-1/2 socket of a launcher not named here.
    OtherPmi,
}

/// The job's size as the launcher's variables say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Size {
    Exactly(usize),
    /// Hydra with `-pmi-port` names only this node's count.
    AtLeast(usize),
}

/// The launcher that started this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Launcher {
    pub(crate) kind: Kind,
    /// A PMIx server is named (`PMIX_RANK` and a `PMIX_SERVER_URI*`).
    pub(crate) pmix: bool,
    /// The PMI-1/2 socket: `PMI_FD` or `PMI_PORT`.
    pub(crate) wire: Option<&'static str>,
    pub(crate) size: Option<Size>,
    pub(crate) rank: Option<usize>,
    /// The variables that said so, for messages: `PMI_RANK=3, PMI_SIZE=4`.
    pub(crate) evidence: String,
}

impl Launcher {
    /// The launcher of this process, from the environment it was started
    /// with; `None` when no launcher's variables are there (run alone).
    pub(crate) fn at_start() -> Option<Launcher> {
        let vars = start_env();
        Launcher::from_vars(|k| vars.get(k).cloned())
    }

    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Option<Launcher> {
        let has = |k: &str| var(k).is_some();
        let pmix = super::pmi::hint::pmix_named(&var);
        let wire = ["PMI_FD", "PMI_PORT"].into_iter().find(|k| has(k));
        let (kind, rank_var, size_var) = if has(crate::protocol::env::RANK) {
            (Kind::Rlaunch, "ONESIDE_RANK", "ONESIDE_SIZE")
        } else if has("OMPI_COMM_WORLD_SIZE") {
            (Kind::OpenMpi, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")
        } else if has("FLUX_JOB_SIZE") {
            (Kind::Flux, "FLUX_TASK_RANK", "FLUX_JOB_SIZE")
        } else if has("HYDI_CONTROL_FD") || (wire.is_some() && has("MPI_LOCALNRANKS")) {
            let rank = if has("PMI_RANK") { "PMI_RANK" } else { "PMI_ID" };
            (Kind::Hydra, rank, "PMI_SIZE")
        } else if has("SLURM_STEP_NUM_TASKS") && has("SLURM_PROCID") {
            (Kind::Srun, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS")
        } else if has("PALS_RANKID") || has("PALS_APID") {
            (Kind::Pals, "PALS_RANKID", "PMI_SIZE")
        } else if pmix {
            (Kind::OtherPmix, "PMIX_RANK", "PMI_SIZE")
        } else if wire.is_some() {
            (Kind::OtherPmi, "PMI_RANK", "PMI_SIZE")
        } else {
            return None;
        };
        let number = |k: &'static str| var(k).and_then(|v| v.trim().parse::<usize>().ok()).map(|n| (k, n));
        let rank = number(rank_var);
        let size = match (number(size_var), number("MPI_LOCALNRANKS")) {
            (Some((k, n)), _) => Some((k, Size::Exactly(n))),
            (None, Some((k, n))) if kind == Kind::Hydra => Some((k, Size::AtLeast(n))),
            _ => None,
        };
        let said = [
            rank.map(|(k, n)| format!("{k}={n}")),
            size.map(|(k, n)| format!("{k}={}", n.lower())),
        ];
        let mut evidence: Vec<String> = said.into_iter().flatten().collect();
        if let Some(w) = wire {
            evidence.push(match var(w) {
                Some(v) if w == "PMI_FD" => format!("{w}={v}"),
                _ => w.to_string(),
            });
        }
        if pmix && kind != Kind::OpenMpi {
            evidence.push("PMIX_SERVER_URI*".into());
        }
        Some(Launcher {
            kind,
            pmix,
            wire,
            size: size.map(|(_, s)| s),
            rank: rank.map(|(_, r)| r),
            evidence: evidence.join(", "),
        })
    }

    /// The launcher by what a user types: `mpiexec.hydra -pmi-port`.
    pub(crate) fn name(&self) -> &'static str {
        match (self.kind, self.pmix, self.wire) {
            (Kind::Rlaunch, ..) => "rlaunch",
            (Kind::Hydra, _, Some("PMI_PORT")) => "mpiexec.hydra -pmi-port",
            (Kind::Hydra, ..) => "mpiexec.hydra",
            (Kind::OpenMpi, ..) => "Open MPI's mpirun",
            (Kind::Srun, true, _) => "srun --mpi=pmix",
            (Kind::Srun, false, Some(_)) => "srun --mpi=pmi2",
            (Kind::Srun, false, None) => "srun --mpi=none",
            (Kind::Flux, ..) => "flux run",
            (Kind::Pals, ..) => "HPE PALS",
            (Kind::OtherPmix, ..) => "a PMIx launcher",
            (Kind::OtherPmi, ..) => "a PMI launcher",
        }
    }

    /// The name and the variables that said so: `mpiexec.hydra, which set
    /// PMI_RANK=3, PMI_SIZE=4, PMI_FD=6`.
    pub(crate) fn describe(&self) -> String {
        match self.evidence.is_empty() {
            true => self.name().to_string(),
            false => format!("{}, which set {}", self.name(), self.evidence),
        }
    }

    /// What the launcher offers an MPI to wire up through, in words.
    pub(crate) fn offers(&self) -> String {
        let wire = self.wire.map(|w| format!("a PMI-1/2 socket on {w}"));
        let pmix = self.pmix.then(|| "a PMIx server".to_string());
        match (self.kind, pmix, wire) {
            (Kind::Rlaunch, ..) => "its own service and MPICH's PMI-1 on PMI_PORT".into(),
            (_, Some(p), Some(w)) => format!("{p} and {w}"),
            (_, Some(one), None) | (_, None, Some(one)) => one,
            (_, None, None) => "no PMI at all".into(),
        }
    }

    /// True when the launcher's variables say the job has one rank.
    pub(crate) fn alone(&self) -> bool {
        self.size == Some(Size::Exactly(1))
    }
}

impl Size {
    pub(crate) fn lower(self) -> usize {
        match self {
            Size::Exactly(n) | Size::AtLeast(n) => n,
        }
    }
}

/// The environment the process was started with; the live one if
/// `/proc/self/environ` cannot be read.
fn start_env() -> HashMap<String, String> {
    let Ok(block) = std::fs::read("/proc/self/environ") else {
        return std::env::vars().collect();
    };
    block
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let text = std::str::from_utf8(entry).ok()?;
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k: &str| map.get(k).cloned()
    }

    const URI: (&str, &str) = ("PMIX_SERVER_URI41", "1.0;tcp4://127.0.0.1:9");

    #[test]
    fn each_launcher_is_told_apart_by_its_variables() {
        // The variables, and the name, size and rank they say.
        type Case = (
            &'static [(&'static str, &'static str)],
            &'static str,
            Option<Size>,
            Option<usize>,
        );
        let cases: [Case; 9] = [
            (
                &[
                    ("PMI_FD", "6"),
                    ("PMI_RANK", "3"),
                    ("PMI_SIZE", "4"),
                    ("HYDI_CONTROL_FD", "7"),
                    ("MPI_LOCALNRANKS", "4"),
                ],
                "mpiexec.hydra",
                Some(Size::Exactly(4)),
                Some(3),
            ),
            (
                &[("PMI_PORT", "vm:1"), ("PMI_ID", "2"), ("MPI_LOCALNRANKS", "3")],
                "mpiexec.hydra -pmi-port",
                Some(Size::AtLeast(3)),
                Some(2),
            ),
            (
                &[
                    ("OMPI_COMM_WORLD_SIZE", "4"),
                    ("OMPI_COMM_WORLD_RANK", "1"),
                    ("PMIX_RANK", "1"),
                    URI,
                ],
                "Open MPI's mpirun",
                Some(Size::Exactly(4)),
                Some(1),
            ),
            (
                &[
                    ("SLURM_STEP_NUM_TASKS", "8"),
                    ("SLURM_PROCID", "5"),
                    ("PMI_FD", "9"),
                    ("PMI_SIZE", "8"),
                ],
                "srun --mpi=pmi2",
                Some(Size::Exactly(8)),
                Some(5),
            ),
            (
                &[
                    ("SLURM_STEP_NUM_TASKS", "8"),
                    ("SLURM_PROCID", "5"),
                    ("PMIX_RANK", "5"),
                    URI,
                ],
                "srun --mpi=pmix",
                Some(Size::Exactly(8)),
                Some(5),
            ),
            (
                &[("FLUX_JOB_SIZE", "2"), ("FLUX_TASK_RANK", "1"), ("PMI_FD", "4")],
                "flux run",
                Some(Size::Exactly(2)),
                Some(1),
            ),
            (
                &[
                    ("ONESIDE_RANK", "1"),
                    ("ONESIDE_SIZE", "2"),
                    ("PMI_PORT", "127.0.0.1:5"),
                    ("PMI_ID", "77"),
                ],
                "rlaunch",
                Some(Size::Exactly(2)),
                Some(1),
            ),
            (&[("PALS_RANKID", "3")], "HPE PALS", None, Some(3)),
            (&[("PMIX_RANK", "0"), URI], "a PMIx launcher", None, Some(0)),
        ];
        for (vars, name, size, rank) in cases {
            let l = Launcher::from_vars(lookup(vars)).unwrap();
            assert_eq!((l.name(), l.size, l.rank), (name, size, rank), "{vars:?}");
        }
        assert_eq!(Launcher::from_vars(|_| None), None, "run alone");
    }

    #[test]
    fn what_a_launcher_offers_and_says_reads_as_words() {
        let hydra = Launcher::from_vars(lookup(&[
            ("PMI_FD", "6"),
            ("PMI_RANK", "3"),
            ("PMI_SIZE", "4"),
            ("HYDI_CONTROL_FD", "7"),
        ]))
        .unwrap();
        assert_eq!(
            hydra.describe(),
            "mpiexec.hydra, which set PMI_RANK=3, PMI_SIZE=4, PMI_FD=6"
        );
        assert_eq!(hydra.offers(), "a PMI-1/2 socket on PMI_FD");
        assert!(!hydra.alone());
        let mpirun = Launcher::from_vars(lookup(&[("OMPI_COMM_WORLD_SIZE", "1"), ("PMIX_RANK", "0"), URI])).unwrap();
        assert_eq!(mpirun.offers(), "a PMIx server");
        assert!(mpirun.alone());
    }

    #[test]
    fn the_start_environment_is_read_from_proc() {
        // The test runner was started with PATH, and nothing changes it.
        let vars = start_env();
        assert_eq!(vars.get("PATH").cloned(), std::env::var("PATH").ok());
    }
}
