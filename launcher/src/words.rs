//! Wording shared by the launcher's reports (`--dry-run`, hang and deadlock
//! reports, the profile's node view). A leaf: it names nothing else of the
//! crate, so any of them may use it.

/// Sorted numbers as runs, `first-last` or `n`, joined by `separator`
/// (also the hang reports' `ranks 1-3, 5`).
pub fn number_runs(list: &[usize], separator: &str) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let mut j = i;
        while j + 1 < list.len() && list[j + 1] == list[j] + 1 {
            j += 1;
        }
        parts.push(match j > i {
            true => format!("{}-{}", list[i], list[j]),
            false => list[i].to_string(),
        });
        i = j + 1;
    }
    parts.join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_consecutive_numbers_are_joined() {
        assert_eq!(number_runs(&[1, 2, 3, 5], ", "), "1-3, 5");
        assert_eq!(number_runs(&[0, 2, 4], ","), "0,2,4");
        assert_eq!(number_runs(&[7], ","), "7");
        assert_eq!(number_runs(&[], ","), "");
    }
}
