//! A batch scheduler's allocation as the launcher's host list, as Open MPI's
//! mpirun reads it inside `salloc`/`sbatch` or a PBS job:
//!
//! * Slurm: hosts from `SLURM_JOB_NODELIST` (compressed: `node[01-04,07],login1`),
//!   slots per host from `SLURM_TASKS_PER_NODE` or `SLURM_JOB_CPUS_PER_NODE`
//!   (`2(x3),1`), the rank count from `SLURM_NTASKS`.
//! * PBS/Torque: `PBS_NODEFILE`, one hostname per line, repeated per slot.
//!
//! Slurm wins when both are set. Errors quote the variable and its value.
//! The environment comes in as a closure, so tests never touch the real one.

use crate::error::LaunchError;
use crate::hostfile::{self, HostEntry};
use std::path::PathBuf;

/// The most hosts (or slot counts) one list may expand to: a guard against
/// typos like `n[0-99999999]`.
const MAX_HOSTS: usize = 1 << 20;

/// Which scheduler the allocation came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocSource {
    Slurm { job_id: Option<String> },
    Pbs { path: PathBuf },
}

/// The hosts and rank count a batch job was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub source: AllocSource,
    pub hosts: Vec<HostEntry>,
    /// Ranks to start when the user gives no `-n`.
    pub ntasks: usize,
    /// The variables it was read from, as `(name, value)`, in reading order.
    pub vars: Vec<(String, String)>,
}

impl Allocation {
    /// One line (no newline) for `--dry-run`, e.g. `Slurm allocation 42
    /// (SLURM_JOB_NODELIST=os-h[1-2], SLURM_TASKS_PER_NODE=2(x2))`.
    pub fn describe(&self) -> String {
        let name = match &self.source {
            AllocSource::Slurm { job_id: Some(id) } => format!("Slurm allocation {id}"),
            AllocSource::Slurm { job_id: None } => "Slurm allocation".to_string(),
            AllocSource::Pbs { .. } => "PBS allocation".to_string(),
        };
        let vars: Vec<String> = self.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{name} ({})", vars.join(", "))
    }
}

/// The allocation of the batch job `rlaunch` runs in, if any.
pub fn from_process_env() -> Result<Option<Allocation>, LaunchError> {
    from_env(&|name| std::env::var(name).ok())
}

/// The allocation described by `env` (a variable lookup), if any: Slurm when
/// `SLURM_JOB_NODELIST` (or `SLURM_NODELIST`) is set, else PBS when
/// `PBS_NODEFILE` is. Empty variables count as unset.
pub fn from_env(env: &impl Fn(&str) -> Option<String>) -> Result<Option<Allocation>, LaunchError> {
    if let Some(nodelist) = lookup(env, &["SLURM_JOB_NODELIST", "SLURM_NODELIST"]) {
        return slurm(env, nodelist).map(Some);
    }
    match lookup(env, &["PBS_NODEFILE"]) {
        Some((_, path)) => pbs(PathBuf::from(path)).map(Some),
        None => Ok(None),
    }
}

/// Expands a Slurm hostlist: `node[01-04,07]`, `a[1-2]-ib,b3`, `r[1-2]-n[01-02]`.
#[cfg(test)]
pub fn expand_nodelist(s: &str) -> Result<Vec<String>, String> {
    parse_nodelist(s).map_err(|reason| format!("'{s}': {reason}"))
}

/// Expands `SLURM_TASKS_PER_NODE` syntax: `2(x3),1` is `[2, 2, 2, 1]`.
#[cfg(test)]
pub fn expand_tasks_per_node(s: &str) -> Result<Vec<usize>, String> {
    parse_counts(s).map_err(|reason| format!("'{s}': {reason}"))
}

/// The first of `names` that is set and not empty, with its value.
fn lookup(env: &impl Fn(&str) -> Option<String>, names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|&name| {
        env(name)
            .filter(|v| !v.trim().is_empty())
            .map(|v| (name.to_string(), v.trim().to_string()))
    })
}

fn slurm(env: &impl Fn(&str) -> Option<String>, (list_var, list): (String, String)) -> Result<Allocation, LaunchError> {
    let names = parse_nodelist(&list).map_err(|detail| bad(&list_var, &list, detail))?;
    let mut vars = vec![(list_var.clone(), list.clone())];
    let slots = match lookup(env, &["SLURM_TASKS_PER_NODE", "SLURM_JOB_CPUS_PER_NODE"]) {
        Some((var, value)) => {
            let counts = parse_counts(&value).map_err(|detail| bad(&var, &value, detail))?;
            if counts.len() != names.len() {
                let detail = format!(
                    "it gives slot counts for {} node(s) but {list_var}='{list}' names {}",
                    counts.len(),
                    names.len()
                );
                return Err(bad(&var, &value, detail));
            }
            vars.push((var, value));
            counts
        }
        None => vec![1; names.len()],
    };
    let mut hosts: Vec<HostEntry> = Vec::new();
    for (host, slots) in names.into_iter().zip(slots) {
        match hosts.iter_mut().find(|h| h.host == host) {
            Some(existing) => existing.slots += slots,
            None => hosts.push(HostEntry {
                user: None,
                host,
                slots,
                max_slots: None,
                origin: list_var.clone(),
            }),
        }
    }
    let ntasks = match lookup(env, &["SLURM_NTASKS", "SLURM_NPROCS"]) {
        Some((var, value)) => {
            let n = positive(&value).ok_or_else(|| bad(&var, &value, "expected a positive number of tasks".into()))?;
            vars.push((var, value));
            n
        }
        None => hosts.iter().map(|h| h.slots).sum(),
    };
    let job_id = lookup(env, &["SLURM_JOB_ID", "SLURM_JOBID"]).map(|(_, id)| id);
    Ok(Allocation {
        source: AllocSource::Slurm { job_id },
        hosts,
        ntasks,
        vars,
    })
}

/// Reads `PBS_NODEFILE` with the plain hostfile dialect: repeats add slots,
/// first appearance sets the order, origins read `PBS_NODEFILE:line`.
fn pbs(path: PathBuf) -> Result<Allocation, LaunchError> {
    let text = std::fs::read_to_string(&path).map_err(|source| LaunchError::AllocationRead {
        var: "PBS_NODEFILE".into(),
        path: path.clone(),
        source,
    })?;
    let hosts = hostfile::parse_hostfile(&text, "PBS_NODEFILE")?;
    Ok(Allocation {
        ntasks: hosts.iter().map(|h| h.slots).sum(),
        hosts,
        vars: vec![("PBS_NODEFILE".into(), path.display().to_string())],
        source: AllocSource::Pbs { path },
    })
}

fn parse_nodelist(list: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    for item in split_top_level(list)? {
        if item.is_empty() {
            return Err("empty host name (two commas in a row, or one at an end)".into());
        }
        let expanded = expand_item(item)?;
        if expanded.len() > MAX_HOSTS - names.len() {
            return Err(format!("it names more than {MAX_HOSTS} hosts"));
        }
        names.extend(expanded);
    }
    Ok(names)
}

/// Splits at the commas outside brackets, checking that brackets balance.
fn split_top_level(list: &str) -> Result<Vec<&str>, String> {
    let (mut items, mut start, mut open) = (Vec::new(), 0, false);
    for (i, c) in list.char_indices() {
        match (c, open) {
            ('[', false) => open = true,
            ('[', true) => return Err(format!("nested '[' in '{}'", &list[start..])),
            (']', false) => return Err(format!("']' without a '[' in '{}'", &list[start..=i])),
            (']', true) => open = false,
            (',', false) => {
                items.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    if open {
        return Err(format!("'[' is never closed in '{}'", &list[start..]));
    }
    items.push(list[start..].trim());
    Ok(items)
}

/// One hostlist item, brackets balanced: every bracket group multiplies the
/// names so far, in order (`r[1-2]-n[1-2]`: r1-n1 r1-n2 r2-n1 r2-n2).
fn expand_item(item: &str) -> Result<Vec<String>, String> {
    let mut names = vec![String::new()];
    let mut rest = item;
    while !rest.is_empty() {
        let (literal, group, after) = match rest.split_once('[') {
            Some((literal, tail)) => {
                let (group, after) = tail.split_once(']').expect("brackets were checked");
                (literal, Some(group), after)
            }
            None => (rest, None, ""),
        };
        if let Some(c) = literal
            .chars()
            .find(|&c| !c.is_ascii_alphanumeric() && !"-._".contains(c))
        {
            return Err(format!("'{c}' in '{item}' is not allowed in a host name"));
        }
        names.iter_mut().for_each(|name| name.push_str(literal));
        if let Some(group) = group {
            let suffixes = expand_group(group, item)?;
            if names.len().saturating_mul(suffixes.len()) > MAX_HOSTS {
                return Err(format!("'{item}' names more than {MAX_HOSTS} hosts"));
            }
            names = names
                .iter()
                .flat_map(|name| suffixes.iter().map(move |s| format!("{name}{s}")))
                .collect();
        }
        rest = after;
    }
    Ok(names)
}

/// `01-04,07` → 01 02 03 04 07: the width of a range's low end is kept.
fn expand_group(group: &str, item: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for range in group.split(',') {
        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
        let (Some(a), Some(b)) = (number(lo), number(hi)) else {
            return Err(format!("'{range}' in '{item}' is not a number or a range like 01-04"));
        };
        if a > b {
            return Err(format!("range '{range}' in '{item}' is reversed (write {hi}-{lo})"));
        }
        if b - a >= (MAX_HOSTS - out.len()) as u64 {
            return Err(format!("'{item}' names more than {MAX_HOSTS} hosts"));
        }
        out.extend((a..=b).map(|n| format!("{n:0width$}", width = lo.len())));
    }
    Ok(out)
}

/// `2(x3),1` → [2, 2, 2, 1].
fn parse_counts(value: &str) -> Result<Vec<usize>, String> {
    let mut counts = Vec::new();
    for item in value.split(',').map(str::trim) {
        let (count, repeat) = match item.strip_suffix(')').and_then(|s| s.split_once("(x")) {
            Some((count, repeat)) => (positive(count), positive(repeat)),
            None => (positive(item), Some(1)),
        };
        let (Some(count), Some(repeat)) = (count, repeat) else {
            return Err(format!(
                "'{item}' is not a count N or a repeated count N(xM), N and M at least 1, as in '2(x3),1'"
            ));
        };
        if repeat > MAX_HOSTS - counts.len() {
            return Err(format!("it gives counts for more than {MAX_HOSTS} nodes"));
        }
        counts.extend(std::iter::repeat_n(count, repeat));
    }
    Ok(counts)
}

fn number(s: &str) -> Option<u64> {
    match !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        true => s.parse().ok(),
        false => None,
    }
}

fn positive(s: &str) -> Option<usize> {
    number(s).and_then(|n| usize::try_from(n).ok()).filter(|&n| n > 0)
}

fn bad(var: &str, value: &str, detail: String) -> LaunchError {
    LaunchError::BadAllocation {
        var: var.to_string(),
        value: value.to_string(),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    }

    fn hosts(list: &str) -> Vec<String> {
        expand_nodelist(list).unwrap()
    }

    fn summary(alloc: &Allocation) -> Vec<(String, usize, String)> {
        alloc
            .hosts
            .iter()
            .map(|h| (h.host.clone(), h.slots, h.origin.clone()))
            .collect()
    }

    #[test]
    fn hostlists_expand_in_order() {
        assert_eq!(
            hosts("node[01-04,07]"),
            ["node01", "node02", "node03", "node04", "node07"]
        );
        assert_eq!(hosts("a[1-2]-ib,b3"), ["a1-ib", "a2-ib", "b3"]);
        assert_eq!(hosts("os-h[1-4]"), ["os-h1", "os-h2", "os-h3", "os-h4"]);
        assert_eq!(
            hosts("rack[1-2]-n[01-02]"),
            ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]
        );
        assert_eq!(hosts("n[08-10]"), ["n08", "n09", "n10"]);
        assert_eq!(hosts("n[8-10]"), ["n8", "n9", "n10"]);
        assert_eq!(hosts("login-1,compute-a.b, c_3"), ["login-1", "compute-a.b", "c_3"]);
        assert_eq!(hosts("n[3],x[5-5]"), ["n3", "x5"]);
        assert_eq!(hosts("solo"), ["solo"]);
    }

    #[test]
    fn hostlist_errors_name_the_text() {
        let cases = [
            ("node[01-04", "'[' is never closed in 'node[01-04'"),
            ("a,node]1", "']' without a '[' in 'node]'"),
            ("n[1[2]]", "nested '[' in 'n[1[2]]'"),
            ("n[4-1]", "range '4-1' in 'n[4-1]' is reversed"),
            ("n[a-b]", "'a-b' in 'n[a-b]' is not a number"),
            ("n[1-]", "'1-' in 'n[1-]' is not a number"),
            ("n[]", "'' in 'n[]' is not a number"),
            ("a,,b", "empty host name"),
            ("a,", "empty host name"),
            ("no/de", "'/' in 'no/de' is not allowed"),
            ("n[0-99999999]", "more than 1048576 hosts"),
            ("a[0-2000]b[0-2000]", "more than 1048576 hosts"),
        ];
        for (list, reason) in cases {
            let err = expand_nodelist(list).unwrap_err().to_string();
            assert!(err.contains(&format!("'{list}'")), "{err}");
            assert!(err.contains(reason), "{err}");
        }
    }

    #[test]
    fn tasks_per_node_repeats() {
        assert_eq!(expand_tasks_per_node("2(x3),1").unwrap(), [2, 2, 2, 1]);
        assert_eq!(expand_tasks_per_node("4").unwrap(), [4]);
        assert_eq!(expand_tasks_per_node("72(x2),36(x1)").unwrap(), [72, 72, 36]);
        for bad in ["2(x)", "x", "0", "0(x2)", "2(x0)", "2(y3)", "2(x3", "", "2,,1", "+2"] {
            let err = expand_tasks_per_node(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("'{bad}'")) && err.contains("N(xM)"), "{err}");
        }
    }

    #[test]
    fn no_scheduler_no_allocation() {
        assert_eq!(from_env(&env(&[])).unwrap(), None);
        assert_eq!(from_env(&env(&[("SLURM_JOB_NODELIST", " ")])).unwrap(), None);
    }

    #[test]
    fn slurm_tasks_per_node_and_job_id() {
        let vars = [
            ("SLURM_JOB_ID", "42"),
            ("SLURM_JOB_NODELIST", "os-h[1-2]"),
            ("SLURM_TASKS_PER_NODE", "2(x2)"),
            ("SLURM_JOB_CPUS_PER_NODE", "4(x2)"),
        ];
        let alloc = from_env(&env(&vars)).unwrap().unwrap();
        assert_eq!(
            alloc.source,
            AllocSource::Slurm {
                job_id: Some("42".into())
            }
        );
        let origin = "SLURM_JOB_NODELIST".to_string();
        assert_eq!(
            summary(&alloc),
            [("os-h1".into(), 2, origin.clone()), ("os-h2".into(), 2, origin)]
        );
        assert_eq!(alloc.ntasks, 4);
        assert_eq!(
            alloc.describe(),
            "Slurm allocation 42 (SLURM_JOB_NODELIST=os-h[1-2], SLURM_TASKS_PER_NODE=2(x2))"
        );
    }

    #[test]
    fn slurm_older_names_and_cpus_per_node() {
        let vars = [
            ("SLURM_JOBID", "7"),
            ("SLURM_NODELIST", "c[1-3]"),
            ("SLURM_JOB_CPUS_PER_NODE", "4(x2),8"),
            ("SLURM_NPROCS", "5"),
        ];
        let alloc = from_env(&env(&vars)).unwrap().unwrap();
        let slots: Vec<usize> = alloc.hosts.iter().map(|h| h.slots).collect();
        assert_eq!(slots, [4, 4, 8]);
        assert_eq!(alloc.hosts[0].origin, "SLURM_NODELIST");
        assert_eq!(alloc.ntasks, 5);
        assert_eq!(
            alloc.describe(),
            "Slurm allocation 7 (SLURM_NODELIST=c[1-3], SLURM_JOB_CPUS_PER_NODE=4(x2),8, SLURM_NPROCS=5)"
        );
    }

    #[test]
    fn slurm_defaults_to_one_slot_per_node() {
        let alloc = from_env(&env(&[("SLURM_JOB_NODELIST", "a,b,a")])).unwrap().unwrap();
        let slots: Vec<(String, usize)> = alloc.hosts.iter().map(|h| (h.host.clone(), h.slots)).collect();
        assert_eq!(slots, [("a".into(), 2), ("b".into(), 1)]);
        assert_eq!(alloc.ntasks, 3);
        assert_eq!(alloc.source, AllocSource::Slurm { job_id: None });
        assert_eq!(alloc.describe(), "Slurm allocation (SLURM_JOB_NODELIST=a,b,a)");
    }

    #[test]
    fn slurm_errors_name_the_variables() {
        let mismatch = [("SLURM_JOB_NODELIST", "n[1-2]"), ("SLURM_TASKS_PER_NODE", "2(x3)")];
        let err = from_env(&env(&mismatch)).unwrap_err().to_string();
        assert!(err.contains("SLURM_TASKS_PER_NODE='2(x3)'"), "{err}");
        assert!(
            err.contains("3 node(s) but SLURM_JOB_NODELIST='n[1-2]' names 2"),
            "{err}"
        );
        let cases = [
            (
                ("SLURM_JOB_NODELIST", "n[2-1]"),
                ("SLURM_JOB_ID", "1"),
                "SLURM_JOB_NODELIST='n[2-1]'",
            ),
            (
                ("SLURM_JOB_NODELIST", "n1"),
                ("SLURM_JOB_CPUS_PER_NODE", "x"),
                "SLURM_JOB_CPUS_PER_NODE='x'",
            ),
            (("SLURM_JOB_NODELIST", "n1"), ("SLURM_NTASKS", "0"), "SLURM_NTASKS='0'"),
        ];
        for (a, b, quoted) in cases {
            let err = from_env(&env(&[a, b])).unwrap_err().to_string();
            assert!(err.contains(quoted) && err.contains("fix or unset"), "{err}");
        }
    }

    #[test]
    fn pbs_nodefile_counts_repeats_in_first_appearance_order() {
        let path = std::env::temp_dir().join(format!("rlaunch-alloc-{}.nodes", std::process::id()));
        std::fs::write(&path, "n2\nn1\nn2\n\nn3\nn1\nn2\n").unwrap();
        let path_text = path.display().to_string();
        let alloc = from_env(&env(&[("PBS_NODEFILE", &path_text)])).unwrap().unwrap();
        let slurm = from_env(&env(&[("PBS_NODEFILE", &path_text), ("SLURM_JOB_NODELIST", "s1")]));
        std::fs::remove_file(&path).unwrap();
        let expected = [
            ("n2".into(), 3, "PBS_NODEFILE:1".into()),
            ("n1".into(), 2, "PBS_NODEFILE:2".into()),
            ("n3".into(), 1, "PBS_NODEFILE:5".into()),
        ];
        assert_eq!(summary(&alloc), expected);
        assert_eq!(alloc.ntasks, 6);
        assert_eq!(alloc.source, AllocSource::Pbs { path: path.clone() });
        assert_eq!(alloc.describe(), format!("PBS allocation (PBS_NODEFILE={path_text})"));
        // Slurm takes precedence when both are set.
        assert_eq!(slurm.unwrap().unwrap().hosts[0].host, "s1");
    }

    #[test]
    fn a_missing_pbs_nodefile_is_a_read_error() {
        let err = from_env(&env(&[("PBS_NODEFILE", "/nonexistent/nodes")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cannot read PBS_NODEFILE=/nonexistent/nodes: "),
            "{err}"
        );
        assert!(err.contains("unset PBS_NODEFILE"), "{err}");
    }
}
