//! `report.html`'s view of a job whose rank matrix is too large to carry
//! numbers (more than 32 ranks): the bytes between nodes (hosts), labelled
//! and numbered, then a drill-down per node: its ranks against every node.

use super::charts::{grid, Axis};
use super::summary::bytes;
use super::Merged;
use std::fmt::Write as _;

/// The nodes of a job, in the order of their first rank, and each
/// rank's node. A rank whose profile is missing counts under "unknown".
fn nodes_of(m: &Merged) -> (Vec<String>, Vec<usize>) {
    let mut hosts: Vec<String> = Vec::new();
    let mut node_of = Vec::with_capacity(m.size);
    for rank in 0..m.size {
        let host = m
            .ranks
            .iter()
            .find(|p| p.rank == rank)
            .map_or("unknown", |p| p.host.as_str());
        let node = match hosts.iter().position(|h| h == host) {
            Some(i) => i,
            None => {
                hosts.push(host.to_string());
                hosts.len() - 1
            }
        };
        node_of.push(node);
    }
    (hosts, node_of)
}

/// The node matrix and each node's drill-down, from the rank `matrix`.
pub fn node_view(out: &mut String, m: &Merged, matrix: &[Vec<u64>]) {
    let (hosts, node_of) = nodes_of(m);
    let mut nodes = vec![vec![0u64; hosts.len()]; hosts.len()];
    for (from, row) in matrix.iter().enumerate() {
        for (to, &b) in row.iter().enumerate() {
            nodes[node_of[from]][node_of[to]] += b;
        }
    }
    let node_axis = Axis {
        name: "node",
        labels: &hosts,
    };
    let _ = writeln!(
        out,
        "<p>{} ranks on {} node(s): the bytes each node's ranks moved to each node's, then each node's ranks one by one.</p>",
        m.size,
        hosts.len()
    );
    grid(out, "node-heatmap", &nodes, &node_axis, &node_axis);
    for (node, host) in hosts.iter().enumerate() {
        let ranks: Vec<usize> = (0..m.size).filter(|&r| node_of[r] == node).collect();
        let rows: Vec<Vec<u64>> = ranks
            .iter()
            .map(|&r| {
                let mut to_node = vec![0u64; hosts.len()];
                for (to, &b) in matrix[r].iter().enumerate() {
                    to_node[node_of[to]] += b;
                }
                to_node
            })
            .collect();
        let sent: u64 = nodes[node].iter().sum();
        let received: u64 = nodes.iter().map(|row| row[node]).sum();
        let labels: Vec<String> = ranks.iter().map(|r| r.to_string()).collect();
        let _ = writeln!(
            out,
            "<h3>Node {host}: ranks {}</h3>\n<p>Its ranks moved {} to all nodes; {} came to it.</p>",
            crate::words::number_runs(&ranks, ", "),
            bytes(sent),
            bytes(received)
        );
        drill_down(out, node, &labels, &rows, &hosts);
    }
}

/// One node's ranks (rows) against every node (columns) as a table, each
/// cell its bytes on the colour of the heat map: readable printed
/// whatever the number of ranks.
fn drill_down(out: &mut String, node: usize, ranks: &[String], rows: &[Vec<u64>], hosts: &[String]) {
    let max = rows.iter().flatten().copied().max().unwrap_or(0);
    let _ = write!(
        out,
        "<table class=\"drill-down\" id=\"node-{node}\">\n<tr><th>rank \\ to node</th>"
    );
    for host in hosts {
        let _ = write!(out, "<th>{host}</th>");
    }
    out.push_str("</tr>\n");
    for (rank, row) in ranks.iter().zip(rows) {
        let _ = write!(out, "<tr><td>{rank}</td>");
        for &b in row {
            let ink = if super::charts::level(b, max) > 0.5 {
                "white"
            } else {
                "black"
            };
            let _ = write!(
                out,
                "<td style=\"background:{};color:{ink}\">{}</td>",
                super::charts::heat(b, max),
                bytes(b)
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use oneside::profile::RankProfile;

    fn job(size: usize, per_host: usize) -> Merged {
        let ranks = (0..size)
            .map(|rank| RankProfile {
                rank,
                size,
                host: format!("node{}", rank / per_host),
                elapsed_ns: 1,
                families: Vec::new(),
                target_bytes: vec![0; size],
                target_ops: vec![0; size],
                collective_bytes: vec![0; size],
            })
            .collect();
        Merged {
            size,
            ranks,
            missing: Vec::new(),
        }
    }

    #[test]
    fn forty_ranks_on_two_nodes_read_as_two_by_two_with_their_sums() {
        let m = job(40, 20);
        let mut matrix = vec![vec![0u64; 40]; 40];
        matrix[0][39] = 100; // node0 -> node1
        matrix[21][1] = 7; // node1 -> node0
        matrix[22][23] = 5; // within node1
        let mut out = String::new();
        node_view(&mut out, &m, &matrix);
        assert!(out.contains("<svg id=\"node-heatmap\""), "{out}");
        assert!(
            out.contains(">target node</text>") && out.contains(">node1</text>"),
            "{out}"
        );
        assert!(out.contains(">100 B</text>") && out.contains(">7 B</text>") && out.contains(">5 B</text>"));
        assert!(out.contains("<h3>Node node0: ranks 0-19</h3>"), "{out}");
        assert!(
            out.contains("<p>Its ranks moved 100 B to all nodes; 7 B came to it.</p>"),
            "{out}"
        );
        assert!(out.contains("node1 -&gt; node0: 7 B"), "{out}");
        let drill = &out[out
            .find("<table class=\"drill-down\" id=\"node-1\">")
            .expect("node 1's table")..];
        assert!(drill.contains("<th>node0</th><th>node1</th>"), "{drill}");
        assert!(drill.contains("<tr><td>21</td><td style=\"background:"), "{drill}");
        assert!(drill.contains(">7 B</td>"), "rank 21 sent node0 7 B: {drill}");
    }
}
