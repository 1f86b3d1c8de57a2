//! Teams (`shmem_team_t`): the predefined `SHMEM_TEAM_WORLD` and
//! `SHMEM_TEAM_SHARED`, splits, queries and `shmem_team_ptr`.
//!
//! A handle points to a `TeamObj`. The two predefined ones are statics
//! whose addresses `shmem.h` names; their teams live in the state (the
//! world's own team, and the node team made at init). Split teams are
//! boxed and freed by `shmem_team_destroy`.

use crate::state::{fail, state, world};
use libc::{c_int, c_long, c_void};
use oneside::Team;

/// `shmem_team_config_t`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct TeamConfig {
    pub num_contexts: c_int,
}

/// What a `shmem_team_t` points to.
pub struct TeamObj {
    team: Option<Team>,
    config: TeamConfig,
}

/// A C `shmem_team_t`.
pub type ShmemTeam = *mut TeamObj;

/// `SHMEM_TEAM_WORLD` is this object's address.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut oneside_team_world: TeamObj = TeamObj {
    team: None,
    config: TeamConfig { num_contexts: 0 },
};

/// `SHMEM_TEAM_SHARED` is this object's address.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mut oneside_team_shared: TeamObj = TeamObj {
    team: None,
    config: TeamConfig { num_contexts: 0 },
};

pub fn world_handle() -> ShmemTeam {
    &raw mut oneside_team_world
}

/// The team behind a handle; the end of the job for `SHMEM_TEAM_INVALID`.
pub fn team_handle(api: &'static str, handle: ShmemTeam) -> &'static Team {
    match try_team(api, handle) {
        Some(team) => team,
        None => fail(api, &"the team is SHMEM_TEAM_INVALID"),
    }
}

/// The team behind a handle, `None` for `SHMEM_TEAM_INVALID`.
pub fn try_team(api: &'static str, handle: ShmemTeam) -> Option<&'static Team> {
    if handle.is_null() {
        return None;
    }
    let state = state(api);
    if handle == &raw mut oneside_team_world {
        return Some(state.world.team_world());
    }
    if handle == &raw mut oneside_team_shared {
        return Some(&state.shared);
    }
    // SAFETY: every other non-null handle was boxed by a split below and
    // stays alive until shmem_team_destroy.
    unsafe { (*handle).team.as_ref() }
}

fn boxed(team: Option<Team>, config: *const TeamConfig, mask: c_long) -> ShmemTeam {
    let config = match (config.is_null(), mask & SHMEM_TEAM_NUM_CONTEXTS) {
        // SAFETY: the caller passes a readable config when the mask names a field.
        (false, m) if m != 0 => unsafe { *config },
        _ => TeamConfig::default(),
    };
    match team {
        Some(team) => Box::into_raw(Box::new(TeamObj {
            team: Some(team),
            config,
        })),
        None => std::ptr::null_mut(),
    }
}

const SHMEM_TEAM_NUM_CONTEXTS: c_long = 1;

export! {
    /// # Safety
    /// `team` must be a live team (crate docs).
    pub unsafe extern "C" fn shmem_team_my_pe(team: ShmemTeam) -> c_int {
        try_team("shmem_team_my_pe", team).map_or(-1, |t| t.my_pe() as c_int)
    }
}

export! {
    /// # Safety
    /// `team` must be a live team (crate docs).
    pub unsafe extern "C" fn shmem_team_n_pes(team: ShmemTeam) -> c_int {
        try_team("shmem_team_n_pes", team).map_or(-1, |t| t.n_pes() as c_int)
    }
}

export! {
    /// # Safety
    /// `src_team` and `dest_team` must be live teams (crate docs).
    pub unsafe extern "C" fn shmem_team_translate_pe(src_team: ShmemTeam, src_pe: c_int, dest_team: ShmemTeam) -> c_int {
        const API: &str = "shmem_team_translate_pe";
        let (Some(from), Some(to)) = (try_team(API, src_team), try_team(API, dest_team)) else {
            return -1;
        };
        let Ok(pe) = usize::try_from(src_pe) else {
            return -1;
        };
        from.translate_pe(pe, to).map_or(-1, |p| p as c_int)
    }
}

export! {
    /// # Safety
    /// `team` must be a live team (crate docs), and `config` null or valid for
    /// one write of a `shmem_team_config_t`.
    pub unsafe extern "C" fn shmem_team_get_config(team: ShmemTeam, mask: c_long, config: *mut TeamConfig) -> c_int {
        if try_team("shmem_team_get_config", team).is_none() || config.is_null() {
            return -1;
        }
        if mask & SHMEM_TEAM_NUM_CONTEXTS != 0 {
            // SAFETY: a valid handle points to a TeamObj (predefined or boxed);
            // the caller passes a writable config.
            unsafe { (*config).num_contexts = (*team).config.num_contexts };
        }
        0
    }
}

export! {
    /// # Safety
    /// `parent` must be a live team (crate docs), `new_team` valid for one
    /// write of a `shmem_team_t`, and `config` null or, when `mask` names a
    /// field, valid for reading a `shmem_team_config_t`.
    pub unsafe extern "C" fn shmem_team_split_strided(
        parent: ShmemTeam,
        start: c_int,
        stride: c_int,
        size: c_int,
        config: *const TeamConfig,
        mask: c_long,
        new_team: *mut ShmemTeam,
    ) -> c_int {
        const API: &str = "shmem_team_split_strided";
        // SAFETY: the caller passes a writable shmem_team_t.
        unsafe { new_team.write(std::ptr::null_mut()) };
        let Some(parent) = try_team(API, parent) else {
            return -1;
        };
        let (Ok(start), Ok(size)) = (usize::try_from(start), usize::try_from(size)) else {
            return -1;
        };
        match world(API).split_strided(parent, start, stride as isize, size) {
            // SAFETY: as above.
            Ok(team) => unsafe { new_team.write(boxed(team, config, mask)) },
            Err(_) => return -1,
        }
        0
    }
}

export! {
    /// # Safety
    /// `parent` must be a live team (crate docs), `xaxis_team` and
    /// `yaxis_team` each valid for one write of a `shmem_team_t`, and each
    /// config null or, when its mask names a field, valid for reading a
    /// `shmem_team_config_t`.
    #[allow(clippy::too_many_arguments)]
    pub unsafe extern "C" fn shmem_team_split_2d(
        parent: ShmemTeam,
        xrange: c_int,
        xaxis_config: *const TeamConfig,
        xaxis_mask: c_long,
        xaxis_team: *mut ShmemTeam,
        yaxis_config: *const TeamConfig,
        yaxis_mask: c_long,
        yaxis_team: *mut ShmemTeam,
    ) -> c_int {
        const API: &str = "shmem_team_split_2d";
        // SAFETY: the caller passes writable shmem_team_t objects.
        unsafe {
            xaxis_team.write(std::ptr::null_mut());
            yaxis_team.write(std::ptr::null_mut());
        }
        let (Some(parent), Ok(xrange)) = (try_team(API, parent), usize::try_from(xrange)) else {
            return -1;
        };
        match world(API).split_2d(parent, xrange) {
            // SAFETY: as above.
            Ok((row, column)) => unsafe {
                xaxis_team.write(boxed(Some(row), xaxis_config, xaxis_mask));
                yaxis_team.write(boxed(Some(column), yaxis_config, yaxis_mask));
            },
            Err(_) => return -1,
        }
        0
    }
}

export! {
    /// # Safety
    /// `team` must be a live team (crate docs), and no call on it, or on a
    /// context made on it, may be running on another thread or start after
    /// this one. The predefined teams and `SHMEM_TEAM_INVALID` are left alone.
    pub unsafe extern "C" fn shmem_team_destroy(team: ShmemTeam) {
        const API: &str = "shmem_team_destroy";
        if team.is_null() || team == &raw mut oneside_team_world || team == &raw mut oneside_team_shared {
            return;
        }
        // SAFETY: a non-predefined, non-null handle was boxed by a split.
        let obj = unsafe { Box::from_raw(team) };
        if let Some(team) = obj.team {
            crate::state::ok(API, world(API).team_destroy(team));
        }
    }
}

export! {
    /// # Safety
    /// `team` must be a live team (crate docs); `dest` is checked (any address
    /// that is not symmetric, or not reachable by load and store, gives null).
    pub unsafe extern "C" fn shmem_team_ptr(team: ShmemTeam, dest: *const c_void, pe: c_int) -> *mut c_void {
        const API: &str = "shmem_team_ptr";
        let Some(team) = try_team(API, team) else {
            return std::ptr::null_mut();
        };
        let w = world(API);
        let rank = usize::try_from(pe)
            .ok()
            .and_then(|pe| team.translate_pe(pe, w.team_world()));
        rank.and_then(|rank| w.peer_address(dest as usize, rank))
            .map_or(std::ptr::null_mut(), |p| p.cast())
    }
}
