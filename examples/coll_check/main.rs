//! Checks every collective against a serial computation, on every team
//! shape: the world, a strided subset, the rows and columns of a 2-D split,
//! and single-member teams; at sizes 0, 1, odd, and larger than any internal
//! buffer; for every reduction operation on every type it applies to.
//! Also checks that bad arguments are errors, not hangs, and that team
//! slots run out with an error and come back when teams are destroyed.
//!
//!   rlaunch -n 4 target/debug/examples/coll_check [--quick]
//!
//! Each rank computes what every member contributed (values are a function
//! of the world rank, the element and the case), so it can check its own
//! results without communication. Prints one line per family checked, and
//! `coll_check: ok` at the end; exits 1 on the first wrong element.

mod reductions;

use oneside::prelude::*;
use oneside::{Pod, Result, Team, World};
use std::process::ExitCode;

/// What every check returns: an error message for a wrong result.
pub(crate) type Check = std::result::Result<(), String>;

fn main() -> ExitCode {
    let quick = std::env::args().any(|a| a == "--quick");
    match run(quick) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(wrong)) => {
            println!("coll_check: MISMATCH: {wrong}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("coll_check: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(quick: bool) -> Result<Check> {
    let world = oneside::init()?;
    let me = world.rank();
    let teams = make_teams(&world)?;
    let sizes: &[usize] = if quick {
        &[0, 1, 7, 9001]
    } else {
        &[0, 1, 7, 64, 333, 9001]
    };
    for (name, team) in &teams {
        for &n in sizes {
            for check in [sync, broadcast, fcollect, collect, alltoall, alltoalls] {
                if let Err(wrong) = check(&world, team.as_ref(), n)? {
                    return Ok(Err(format!("rank {me}, team {name}, n={n}: {wrong}")));
                }
            }
            if let Err(wrong) = reductions::all(&world, team.as_ref(), n, quick)? {
                return Ok(Err(format!("rank {me}, team {name}, n={n}: {wrong}")));
            }
        }
        if me == 0 {
            println!("checked team {name}: sync, barrier, broadcast, fcollect, collect, alltoall(s), reduce, inscan, exscan at sizes {sizes:?}");
        }
    }
    if let Err(wrong) = errors(&world)? {
        return Ok(Err(format!("rank {me}: {wrong}")));
    }
    for team in teams.into_iter().filter_map(|(_, team)| team) {
        world.team_destroy(team)?;
    }
    if let Err(wrong) = exhaustion(&world)? {
        return Ok(Err(format!("rank {me}: {wrong}")));
    }
    world.barrier()?;
    println!("coll_check: rank {me} ok");
    Ok(Ok(()))
}

/// The team shapes, by name; `None` where this rank is not a member.
fn make_teams(world: &World) -> Result<Vec<(String, Option<Team>)>> {
    let n = world.size();
    let mut teams = vec![(
        "world".to_string(),
        Some(world.split_strided(world.team_world(), 0, 1, n)?.expect("all")),
    )];
    if n >= 3 {
        let size = (n - 1).div_ceil(2);
        teams.push(("odd ranks".into(), world.split_strided(world.team_world(), 1, 2, size)?));
        teams.push((
            "reversed".into(),
            world.split_strided(world.team_world(), n - 1, -1, n)?,
        ));
    }
    let x = if n >= 4 { 2 } else { 1 };
    let (row, col) = world.split_2d(world.team_world(), x)?;
    teams.push((format!("row of {x}"), Some(row)));
    teams.push((format!("column of a {x}-wide grid"), Some(col)));
    let (single, _whole) = world.split_2d(world.team_world(), 1)?;
    teams.push(("single member".into(), Some(single)));
    world.team_destroy(_whole)?;
    Ok(teams)
}

/// A value member `world_rank` contributes at element `i` of case `case`.
pub(crate) fn value(world_rank: usize, i: usize, case: u64) -> u64 {
    let mut z = (world_rank as u64) << 40 ^ (i as u64) << 8 ^ case;
    z = (z ^ (z >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z ^ (z >> 29)
}

fn members(team: &Team) -> Vec<usize> {
    (0..team.n_pes())
        .map(|i| team.world_rank(i).expect("a member"))
        .collect()
}

fn expect_eq<T: Pod + PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Check {
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None if got.len() == want.len() => Ok(()),
        None => Err(format!("{what}: {} elements, expected {}", got.len(), want.len())),
        Some(i) => Err(format!("{what}: element {i} is {:?}, expected {:?}", got[i], want[i])),
    }
}

fn sync(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    let box_ = world.alloc::<u64>(1)?;
    let mut check = Ok(());
    if let (Some(team), 1) = (team, n) {
        let m = team.n_pes();
        let next = team.world_rank((team.my_pe() + 1) % m).expect("a member");
        let stamp = 1000 + world.rank() as u64;
        world.put_value(&box_, next, 0, stamp)?;
        world.team_barrier(team)?;
        let prev = team.world_rank((team.my_pe() + m - 1) % m).expect("a member");
        let got = world.local_to_vec(&box_)?;
        check = expect_eq("barrier", &got, &[1000 + prev as u64]);
        world.team_sync(team)?;
    }
    world.free(box_)?;
    Ok(check)
}

fn broadcast(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    let src = world.alloc::<u32>(n)?;
    let dst = world.alloc::<u32>(n)?;
    let mut check = Ok(());
    if let Some(team) = team {
        let mine: Vec<u32> = (0..n).map(|i| value(world.rank(), i, 1) as u32).collect();
        for root in [0, team.n_pes() - 1, team.n_pes() / 2] {
            world.local_write(&src, 0, &mine)?;
            // Destinations must be ready before any member enters (data
            // from another host may arrive before this rank calls).
            world.team_sync(team)?;
            world.broadcast(team, &dst, &src, n, root)?;
            let root_rank = team.world_rank(root).expect("a member");
            let want: Vec<u32> = (0..n).map(|i| value(root_rank, i, 1) as u32).collect();
            check = check.and(expect_eq(
                &format!("broadcast from {root}"),
                &world.local_to_vec(&dst)?,
                &want,
            ));
            world.broadcast(team, &src, &src, n, root)?;
            check = check.and(expect_eq(
                &format!("broadcast in place from {root}"),
                &world.local_to_vec(&src)?,
                &want,
            ));
            // OpenSHMEM 1.4's form: the root's destination keeps what it had.
            let untouched = vec![0xdead_beef_u32; n];
            world.local_write(&src, 0, &mine)?;
            world.local_write(&dst, 0, &untouched)?;
            world.team_sync(team)?;
            world.broadcast_to_others(team, &dst, &src, n, root)?;
            check = check.and(expect_eq(
                &format!("broadcast_to_others from {root}"),
                &world.local_to_vec(&dst)?,
                if team.my_pe() == root { &untouched } else { &want },
            ));
        }
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

fn fcollect(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    // Allocation sizes match on every rank, members or not (OpenSHMEM's
    // rule, which --debug checks): room for the largest team.
    let src = world.alloc::<u16>(n)?;
    let dst = world.alloc::<u16>(n * world.size())?;
    let mut check = Ok(());
    if let Some(team) = team {
        let mine: Vec<u16> = (0..n).map(|i| value(world.rank(), i, 2) as u16).collect();
        world.local_write(&src, 0, &mine)?;
        world.fcollect(team, &dst, &src, n)?;
        let want: Vec<u16> = members(team)
            .iter()
            .flat_map(|&r| (0..n).map(move |i| value(r, i, 2) as u16))
            .collect();
        check = expect_eq("fcollect", &world.local_to_vec(&dst)?[..want.len()], &want);
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

fn collect(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    let m = team.map_or(1, Team::n_pes);
    let count = |rank: usize| n + rank % 3;
    let src = world.alloc::<i64>(n + 2)?;
    let dst = world.alloc::<i64>((n + 2) * world.size())?;
    let mut check = Ok(());
    if let Some(team) = team {
        let mine: Vec<i64> = (0..count(world.rank()))
            .map(|i| value(world.rank(), i, 3) as i64)
            .collect();
        world.local_write(&src, 0, &mine)?;
        let total = world.collect(team, &dst, &src, mine.len())?;
        let want: Vec<i64> = members(team)
            .iter()
            .flat_map(|&r| (0..count(r)).map(move |i| value(r, i, 3) as i64))
            .collect();
        check = expect_eq("collect", &world.local_to_vec(&dst)?[..total.min((n + 2) * m)], &want);
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

fn alltoall(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    let m = team.map_or(1, Team::n_pes);
    let src = world.alloc::<u64>(n * world.size())?;
    let dst = world.alloc::<u64>(n * world.size())?;
    let mut check = Ok(());
    if let Some(team) = team {
        let block = |from: usize, to: usize, i: usize| value(from, to * n + i, 4);
        let mine: Vec<u64> = (0..m)
            .flat_map(|j| (0..n).map(move |i| (j, i)))
            .map(|(j, i)| block(world.rank(), j, i))
            .collect();
        world.local_write(&src, 0, &mine)?;
        world.alltoall(team, &dst, &src, n)?;
        let me = team.my_pe();
        let want: Vec<u64> = members(team)
            .iter()
            .flat_map(|&r| (0..n).map(move |i| block(r, me, i)))
            .collect();
        check = expect_eq("alltoall", &world.local_to_vec(&dst)?[..want.len()], &want);
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

fn alltoalls(world: &World, team: Option<&Team>, n: usize) -> Result<Check> {
    let m = team.map_or(1, Team::n_pes);
    let (ds, ss) = (3, 2);
    let span = |stride: usize| (n * m).saturating_sub(1) * stride + 1;
    let room = |stride: usize| (n * world.size()).saturating_sub(1) * stride + 1;
    let src = world.alloc::<i32>(room(ss))?;
    let dst = world.alloc::<i32>(room(ds))?;
    let mut check = Ok(());
    if let Some(team) = team {
        let mine: Vec<i32> = (0..span(ss)).map(|k| value(world.rank(), k, 5) as i32).collect();
        world.local_write(&src, 0, &mine)?;
        world.local_write(&dst, 0, &vec![-7; span(ds)])?;
        world.team_sync(team)?;
        world.alltoalls(team, &dst, &src, ds, ss, n)?;
        let me = team.my_pe();
        let mut want = vec![-7; span(ds)];
        for (i, &r) in members(team).iter().enumerate() {
            for k in 0..n {
                want[(i * n + k) * ds] = value(r, (me * n + k) * ss, 5) as i32;
            }
        }
        if n > 0 {
            check = expect_eq("alltoalls", &world.local_to_vec(&dst)?[..want.len()], &want);
        }
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

/// Bad arguments are errors on every member, never hangs.
fn errors(world: &World) -> Result<Check> {
    let team = world.team_world();
    let x = world.alloc::<u64>(4)?;
    let n = world.size();
    let root = world.broadcast(team, &x, &x, 4, n).map(drop);
    let bounds = world.fcollect(team, &x, &x, 4).map(drop);
    let small = world.alloc::<u64>(2)?;
    let collected = world.collect(team, &small, &x, 4).map(drop);
    let split = world.split_strided(team, 0, 1, n + 1).map(drop);
    let differ = match n {
        1 => Err(None),
        _ => world
            .split_strided(team, 0, 1, 1 + world.rank() % 2)
            .map(|_| ())
            .map_err(Some),
    };
    world.free(small)?;
    world.free(x)?;
    let wanted = [
        ("a root outside the team", root),
        ("an fcollect into too small a destination", bounds),
        ("a collect into too small a destination", collected),
        ("a split past the parent", split),
    ];
    for (what, result) in wanted {
        match result {
            Err(e) if e.to_string().contains(&format!("rank {}", world.rank())) => {}
            Err(e) => return Ok(Err(format!("{what}: the error does not name this rank: {e}"))),
            Ok(()) => return Ok(Err(format!("{what} was accepted"))),
        }
    }
    if let Ok(()) = differ {
        return Ok(Err(
            "a split with arguments that differ between members was accepted".into()
        ));
    }
    if world.rank() == 0 {
        println!("checked errors: a root outside the team, an fcollect's and a collect's destination too small, a split past the parent, arguments that differ");
    }
    Ok(Ok(()))
}

/// Teams run out with an error, and destroying them gives the slots back.
fn exhaustion(world: &World) -> Result<Check> {
    let mut made = Vec::new();
    let err = loop {
        match world.split_strided(world.team_world(), 0, 1, world.size()) {
            Ok(team) => made.push(team.expect("every rank is a member")),
            Err(e) => break e,
        }
        if made.len() > oneside::MAX_TEAMS {
            return Ok(Err("more teams than MAX_TEAMS were made".into()));
        }
    };
    let count = made.len();
    for team in made {
        world.team_destroy(team)?;
    }
    let again = world
        .split_strided(world.team_world(), 0, 1, world.size())?
        .expect("a member");
    world.team_destroy(again)?;
    if !err.to_string().contains("team slot") || count + 1 != oneside::MAX_TEAMS {
        return Ok(Err(format!("after {count} teams: {err}")));
    }
    if world.rank() == 0 {
        println!("checked exhaustion: {count} teams besides the world, then: {err}");
    }
    Ok(Ok(()))
}
