//! Never a silent singleton: when no road to the launcher's PMI was found
//! but some launcher's variables say this process is one of several ranks,
//! the rank stops with a sentence naming that launcher and what to do,
//! rather than running alone and computing a wrong answer.

/// The variables launchers set, and the launcher each names.
const SIZES: [(&str, &str); 6] = [
    (
        "PMI_SIZE",
        "a PMI launcher (PMI_SIZE is set but neither PMI_FD nor PMI_PORT)",
    ),
    ("OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"),
    ("FLUX_JOB_SIZE", "Flux"),
    ("MPI_LOCALNRANKS", "MPICH's Hydra (mpiexec)"),
    ("MV2_COMM_WORLD_SIZE", "MVAPICH's mpirun_rsh"),
    ("PMI_UNIVERSE_SIZE", "a PMI launcher"),
];

const URIS: [&str; 6] = [
    "PMIX_SERVER_URI41",
    "PMIX_SERVER_URI4",
    "PMIX_SERVER_URI3",
    "PMIX_SERVER_URI2",
    "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI",
];

/// True when a PMIx server is named for this process.
pub(crate) fn pmix_named(var: &impl Fn(&str) -> Option<String>) -> bool {
    var("PMIX_RANK").is_some() && URIS.iter().any(|u| var(u).is_some())
}

/// The sentence for a process some launcher started as one of several
/// ranks with no PMI road left; `None` when nothing says so (a singleton).
pub(crate) fn missing_pmi_hint() -> Option<String> {
    missing_pmi_hint_from(|k| std::env::var(k).ok())
}

pub(crate) fn missing_pmi_hint_from(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    if var("PMI_FD").is_some() || var("PMI_PORT").is_some() {
        return None;
    }
    let many = |name: &str| var(name).and_then(|v| v.trim().parse::<u64>().ok()).filter(|&n| n > 1);
    // Only srun's tasks carry SLURM_STEP_NUM_TASKS; a batch script does not.
    if let (Some(tasks), Some(task)) = (many("SLURM_STEP_NUM_TASKS"), var("SLURM_PROCID")) {
        let step = var("SLURM_STEP_ID").unwrap_or_else(|| "?".into());
        let job = var("SLURM_JOB_ID").unwrap_or_else(|| "?".into());
        return Some(format!(
            "this process is task {task} of {tasks} in Slurm step {job}.{step}, but srun gave it no PMI server \
             (PMI_FD is unset and there is no PMIx server), so its tasks cannot find each other; run it with \
             `srun --mpi=pmix` or `srun --mpi=pmi2` (or set MpiDefault in slurm.conf), or start it with rlaunch"
        ));
    }
    if var("PALS_RANKID").is_some() || var("PALS_APID").is_some() {
        let rank = var("PALS_RANKID").unwrap_or_else(|| "?".into());
        return Some(format!(
            "this process is rank {rank} of an HPE PALS job (PALS_RANKID is set) without a PMIx server: \
             oneside wires up through PMIx, PMI-1 or PMI-2, not Cray PMI; run it with `mpiexec --pmi=pmix` \
             (or `aprun`'s PMIx mode), or start it with rlaunch"
        ));
    }
    for (name, launcher) in SIZES {
        if let Some(n) = many(name) {
            return Some(format!(
                "{name}={n} says this process is one of {n} ranks started by {launcher}, but the launcher \
                 gave it no PMI connection (no PMI_FD, PMI_PORT or PMIx server), so its ranks cannot find \
                 each other; start it with that launcher's PMI enabled (Hydra: `mpiexec.hydra`, Open MPI: \
                 `mpirun`, Flux: `flux run -o pmi=simple`), or with rlaunch"
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(vars: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<&str, &str> = vars.iter().copied().collect();
        move |k: &str| map.get(k).map(|v| v.to_string())
    }

    #[test]
    fn a_task_of_srun_without_pmi_gets_a_hint_not_a_singleton() {
        let srun = [
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_PROCID", "2"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_JOB_ID", "17"),
        ];
        let hint = missing_pmi_hint_from(lookup(&srun)).unwrap();
        for part in [
            "task 2 of 4",
            "step 17.0",
            "PMI_FD is unset",
            "srun --mpi=pmix",
            "MpiDefault",
        ] {
            assert!(hint.contains(part), "{part:?} missing from: {hint}");
        }
        let one_task = [("SLURM_STEP_NUM_TASKS", "1"), ("SLURM_PROCID", "0")];
        assert_eq!(
            missing_pmi_hint_from(lookup(&one_task)),
            None,
            "srun -n 1 runs a singleton"
        );
        let batch_script = [("SLURM_NTASKS", "4"), ("SLURM_PROCID", "0")];
        assert_eq!(
            missing_pmi_hint_from(lookup(&batch_script)),
            None,
            "a program run straight from a batch script is a singleton"
        );
    }

    #[test]
    fn a_pals_environment_stops_clearly() {
        let hint = missing_pmi_hint_from(lookup(&[("PALS_RANKID", "3"), ("PALS_NODEID", "1")])).unwrap();
        for part in ["rank 3", "HPE PALS", "PMIx", "rlaunch"] {
            assert!(hint.contains(part), "{part:?} missing from: {hint}");
        }
    }

    #[test]
    fn every_launchers_size_variable_is_heard() {
        for (name, launcher) in SIZES {
            let hint = missing_pmi_hint_from(lookup(&[(name, "4")])).unwrap_or_default();
            assert!(
                hint.contains(&format!("{name}=4")) && hint.contains(launcher),
                "{name}: {hint}"
            );
            assert_eq!(
                missing_pmi_hint_from(lookup(&[(name, "1")])),
                None,
                "{name}=1 is a singleton"
            );
        }
        let with_fd = lookup(&[("OMPI_COMM_WORLD_SIZE", "4"), ("PMI_FD", "3")]);
        assert_eq!(missing_pmi_hint_from(with_fd), None, "a PMI road exists");
        assert_eq!(missing_pmi_hint_from(|_| None), None);
    }

    #[test]
    fn a_pmix_server_is_named_by_rank_and_uri() {
        let pmix = [("PMIX_RANK", "2"), ("PMIX_SERVER_URI41", "pmix-server.1;tcp4://x")];
        assert!(pmix_named(&lookup(&pmix)));
        assert!(!pmix_named(&lookup(&pmix[..1])));
    }
}
