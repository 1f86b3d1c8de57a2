//! `PMI_process_mapping`, the job attribute through which a PMI-2 server
//! (Slurm's plugin, MPICH's Hydra) says which node each rank runs on, so a
//! rank learns its node's ranks without an all-gather.
//!
//! The value is `(vector,(start,nodes,ppn),...)`: each block puts `ppn`
//! consecutive ranks on each of the nodes `start..start+nodes` in turn, and
//! the blocks repeat until every rank has a node. `srun -N4 -n1024` gives
//! `(vector,(0,4,256))`; a cyclic distribution gives `(vector,(0,4,1))`.

/// Each rank's node id, or `None` if `mapping` is not a vector of blocks
/// that places all `size` ranks.
pub(crate) fn nodes_of(mapping: &str, size: usize) -> Option<Vec<usize>> {
    let blocks = parse(mapping)?;
    if blocks.iter().all(|&(_, nodes, ppn)| nodes == 0 || ppn == 0) {
        return None;
    }
    let mut node_of = Vec::with_capacity(size);
    'fill: loop {
        for &(start, nodes, ppn) in &blocks {
            for node in start..start + nodes {
                for _ in 0..ppn {
                    if node_of.len() == size {
                        break 'fill;
                    }
                    node_of.push(node);
                }
            }
        }
    }
    Some(node_of)
}

/// The `(start,nodes,ppn)` blocks of a mapping.
fn parse(mapping: &str) -> Option<Vec<(usize, usize, usize)>> {
    let inner = mapping.trim().strip_prefix('(')?.strip_suffix(')')?;
    let rest = inner.trim_start().strip_prefix("vector")?.trim_start();
    let mut blocks = Vec::new();
    for block in rest.split(')').map(str::trim).filter(|b| !b.is_empty()) {
        let fields = block.trim_start_matches(',').trim().strip_prefix('(')?;
        let numbers: Vec<usize> = fields
            .split(',')
            .map(|f| f.trim().parse().ok())
            .collect::<Option<_>>()?;
        match numbers[..] {
            [start, nodes, ppn] => blocks.push((start, nodes, ppn)),
            _ => return None,
        }
    }
    (!blocks.is_empty()).then_some(blocks)
}

#[cfg(test)]
mod tests {
    use super::nodes_of;

    #[test]
    fn a_block_distribution_fills_each_node_in_turn() {
        let nodes = nodes_of("(vector,(0,4,3))", 12).unwrap();
        assert_eq!(nodes, [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
    }

    #[test]
    fn a_cyclic_distribution_repeats_the_blocks() {
        assert_eq!(nodes_of("(vector,(0,2,1))", 5).unwrap(), [0, 1, 0, 1, 0]);
    }

    #[test]
    fn uneven_nodes_take_several_blocks() {
        // srun -N2 -n5 in blocks: 3 ranks on node 0, 2 on node 1.
        let nodes = nodes_of("(vector,(0,1,3),(1,1,2))", 5).unwrap();
        assert_eq!(nodes, [0, 0, 0, 1, 1]);
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "vector,(0,1,1)",
            "(vector)",
            "(vector,(0,1))",
            "(vector,(0,0,0))",
            "(list,(0,1,1))",
        ] {
            assert_eq!(nodes_of(bad, 4), None, "{bad:?}");
        }
    }
}
