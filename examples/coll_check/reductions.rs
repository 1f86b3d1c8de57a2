//! Reductions and scans for every operation on every type it applies to,
//! against a serial fold in member order. Contributions are small integers
//! (or exact binary fractions), so even float results are exact in any
//! order of combination and are compared exactly.

use super::{expect_eq, members, value, Check};
use oneside::{And, Max, Min, Number, Or, Prod, ReduceOp, Result, Sum, Team, World, Xor};

/// A contribution for an operation: small enough that sums and products
/// stay exact in every type.
pub(crate) trait Sample: Number + std::fmt::Debug {
    fn sample(raw: u64, for_prod: bool) -> Self;
}

macro_rules! samples {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn sample(raw: u64, for_prod: bool) -> Self {
                match for_prod {
                    true => [1, 1, 2, 1, 3, 1, 1, 2][(raw % 8) as usize] as $t,
                    false => (raw % 61) as $t,
                }
            }
        }
    )*};
}
samples!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, f32, f64);

/// Every case for one element type and one operation.
fn one<T: Sample, O: ReduceOp<T>>(world: &World, team: Option<&Team>, n: usize, op: O, case: u64) -> Result<Check> {
    let for_prod = O::NAME == "prod";
    let contribution = |rank: usize, i: usize| T::sample(value(rank, i, case), for_prod);
    let src = world.alloc::<T>(n)?;
    let dst = world.alloc::<T>(n)?;
    let mut check = Ok(());
    if let Some(team) = team {
        let ranks = members(team);
        let fold = |upto: usize| -> Vec<T> {
            (0..n)
                .map(|i| {
                    let mut acc = contribution(ranks[0], i);
                    for &r in &ranks[1..upto] {
                        acc = O::combine(acc, contribution(r, i));
                    }
                    acc
                })
                .collect()
        };
        let mine: Vec<T> = (0..n).map(|i| contribution(world.rank(), i)).collect();
        let what = |kind: &str| format!("{kind} {} of {}", O::NAME, std::any::type_name::<T>());
        let me = team.my_pe();
        world.local_write(&src, 0, &mine)?;
        world.reduce(team, op, &dst, &src, n)?;
        check = check.and(expect_eq(
            &what("reduce"),
            &world.local_to_vec(&dst)?,
            &fold(ranks.len()),
        ));
        world.reduce(team, op, &src, &src, n)?;
        check = check.and(expect_eq(
            &what("in-place reduce"),
            &world.local_to_vec(&src)?,
            &fold(ranks.len()),
        ));
        world.local_write(&src, 0, &mine)?;
        world.inscan(team, op, &dst, &src, n)?;
        check = check.and(expect_eq(&what("inscan"), &world.local_to_vec(&dst)?, &fold(me + 1)));
        if me > 0 {
            world.exscan(team, op, &src, &src, n)?;
            check = check.and(expect_eq(
                &what("in-place exscan"),
                &world.local_to_vec(&src)?,
                &fold(me),
            ));
        } else {
            world.exscan(team, op, &src, &src, n)?;
            check = check.and(expect_eq(
                &what("exscan leaves member 0"),
                &world.local_to_vec(&src)?,
                &mine,
            ));
        }
        if n > 0 {
            let got = world.reduce_value(team, op, mine[0])?;
            check = check.and(expect_eq(&what("reduce_value"), &[got], &fold(ranks.len())[..1]));
        }
    }
    world.free(dst)?;
    world.free(src)?;
    Ok(check)
}

macro_rules! every_op {
    ($world:expr, $team:expr, $n:expr, $check:ident, ints: $($i:ty),* ; floats: $($f:ty),*) => {{
        $(
            $check = $check.and(one::<$i, _>($world, $team, $n, Sum, 10)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, Prod, 11)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, Min, 12)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, Max, 13)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, And, 14)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, Or, 15)?);
            $check = $check.and(one::<$i, _>($world, $team, $n, Xor, 16)?);
        )*
        $(
            $check = $check.and(one::<$f, _>($world, $team, $n, Sum, 20)?);
            $check = $check.and(one::<$f, _>($world, $team, $n, Prod, 21)?);
            $check = $check.and(one::<$f, _>($world, $team, $n, Min, 22)?);
            $check = $check.and(one::<$f, _>($world, $team, $n, Max, 23)?);
        )*
    }};
}

/// All operations on all types (`quick`: one integer and one float type).
pub(crate) fn all(world: &World, team: Option<&Team>, n: usize, quick: bool) -> Result<Check> {
    let mut check = Ok(());
    if quick {
        every_op!(world, team, n, check, ints: i64; floats: f64);
    } else {
        every_op!(world, team, n, check, ints: i8, i16, i32, i64, isize, u8, u16, u32, u64, usize; floats: f32, f64);
    }
    Ok(check)
}
