//! The symmetric heap's live objects and where the program allocated each,
//! for hang reports: a wait on heap offset 2228224 reads as "element 0 of
//! the 8-byte object allocated at hang.rs:30:25". Kept only while hang
//! reports or the checking mode are on; an allocation costs a map insert
//! then, and in C an unresolved backtrace (resolved only for a report).

use crate::site::Site;
use std::backtrace::Backtrace;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// One live object.
struct Object {
    bytes: usize,
    site: Site,
    /// For an allocation made from C: the stack at the call, whose C
    /// caller a report names.
    trace: Option<Backtrace>,
    /// For one made through a binding: its caller there (a Python line).
    place: Option<String>,
}

/// Live objects by heap offset.
static OBJECTS: Mutex<BTreeMap<usize, Object>> = Mutex::new(BTreeMap::new());

/// Notes the object of `bytes` at heap `offset` that this thread's
/// current call allocated, with that call's site.
pub(crate) fn allocated(offset: usize, bytes: usize) {
    if !super::watching() {
        return;
    }
    let (site, trace, place) = super::LOCAL.with(|local| match (local.c_call.get(), local.call.get()) {
        (Some(_), _) => match crate::site::foreign_caller() {
            Some(place) => (Site::C, None, Some(place)),
            None => (Site::C, Some(Backtrace::force_capture()), None),
        },
        (None, Some(call)) => (call.site, None, None),
        (None, None) => (Site::Unknown, None, None),
    });
    let object = Object {
        bytes,
        site,
        trace,
        place,
    };
    crate::sync::lock(&OBJECTS).insert(offset, object);
}

/// Forgets the object at heap `offset`.
pub(crate) fn freed(offset: usize) {
    if super::watching() {
        crate::sync::lock(&OBJECTS).remove(&offset);
    }
}

/// The live object holding heap `offset`, in words (`the 8-byte object
/// allocated at hang.c:12:20`), `offset`'s byte offset inside it, and
/// its size.
pub(crate) fn object_at(offset: usize) -> Option<(String, usize, usize)> {
    let objects = crate::sync::lock(&OBJECTS);
    let (&start, object) = objects.range(..=offset).next_back()?;
    if offset >= start + object.bytes.max(1) {
        return None;
    }
    let place = match &object.place {
        Some(place) => place.clone(),
        None => object.site.describe(object.trace.as_ref()),
    };
    let at = crate::site::phrase(&place);
    Some((
        format!("the {}-byte object allocated{at}", object.bytes),
        offset - start,
        object.bytes,
    ))
}
