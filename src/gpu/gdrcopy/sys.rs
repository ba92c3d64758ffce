//! libgdrapi's entry points as gdrcopy 2.x's include/gdrapi.h declares
//! them, loaded at run time so that qbench needs gdrcopy only where it
//! runs the gdrcopy tests: the raw handle types and function pointers,
//! nothing checked. gdrcopy/mod.rs is the safe wrapper over them.

use std::ffi::{c_int, c_ulong, c_void};

/// gdr_t: an open connection to gdrdrv.
pub type Handle = *mut c_void;

/// gdr_mh_t: a pinned range, passed by value.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct MemHandle {
    pub h: c_ulong,
}

/// The library, kept loaded, and its entry points.
pub struct Api {
    _lib: libloading::Library,
    pub open: unsafe extern "C" fn() -> Handle,
    pub close: unsafe extern "C" fn(Handle) -> c_int,
    pub pin_buffer: unsafe extern "C" fn(Handle, c_ulong, usize, u64, u32, *mut MemHandle) -> c_int,
    pub unpin_buffer: unsafe extern "C" fn(Handle, MemHandle) -> c_int,
    pub map: unsafe extern "C" fn(Handle, MemHandle, *mut *mut c_void, usize) -> c_int,
    pub unmap: unsafe extern "C" fn(Handle, MemHandle, *mut c_void, usize) -> c_int,
    /// gdr_get_info_v2 where the library has it, else gdr_get_info; both
    /// write a gdr_info whose first field is the mapping's GPU address.
    pub get_info: unsafe extern "C" fn(Handle, MemHandle, *mut c_void) -> c_int,
    pub copy_to_mapping: unsafe extern "C" fn(MemHandle, *mut c_void, *const c_void, usize) -> c_int,
    pub copy_from_mapping: unsafe extern "C" fn(MemHandle, *mut c_void, *const c_void, usize) -> c_int,
}

impl Api {
    /// libgdrapi from the loader path with every entry point, or why not and the fix.
    pub fn load() -> Result<Api, (String, String)> {
        // SAFETY: loading gdrcopy's user library runs only its initialisers.
        let lib =
            ["libgdrapi.so.2", "libgdrapi.so"].into_iter().find_map(|n| unsafe { libloading::Library::new(n) }.ok());
        let Some(lib) = lib else {
            return Err((
                "/dev/gdrdrv is present but libgdrapi.so.2 is not on the loader path".into(),
                "install gdrcopy's library (libgdrapi), or add its directory to LD_LIBRARY_PATH".into(),
            ));
        };
        // SAFETY: each symbol's type is the one gdrapi.h declares for its name.
        unsafe {
            Ok(Api {
                open: symbol(&lib, &["gdr_open"])?,
                close: symbol(&lib, &["gdr_close"])?,
                pin_buffer: symbol(&lib, &["gdr_pin_buffer"])?,
                unpin_buffer: symbol(&lib, &["gdr_unpin_buffer"])?,
                map: symbol(&lib, &["gdr_map"])?,
                unmap: symbol(&lib, &["gdr_unmap"])?,
                get_info: symbol(&lib, &["gdr_get_info_v2", "gdr_get_info"])?,
                copy_to_mapping: symbol(&lib, &["gdr_copy_to_mapping"])?,
                copy_from_mapping: symbol(&lib, &["gdr_copy_from_mapping"])?,
                _lib: lib,
            })
        }
    }
}

/// The first of `names` that `lib` exports, as a `T`.
///
/// # Safety
/// `T` must be the function type the library gives that symbol.
unsafe fn symbol<T: Copy>(lib: &libloading::Library, names: &[&str]) -> Result<T, (String, String)> {
    let mut why = String::new();
    for n in names {
        // SAFETY: the caller vouches for `T`.
        match unsafe { lib.get::<T>(*n) } {
            Ok(s) => return Ok(*s),
            Err(e) => why = format!("libgdrapi has no {n} ({e})"),
        }
    }
    Err((why, "install gdrcopy 2.x's libgdrapi".into()))
}
