//! The driver's own questions, one safe function each, asked of devices
//! without creating a context: its version, a device's attributes, memory
//! and PCI address, the device at a PCI address, and whether one device
//! reaches another's memory. The caller has initialised the driver
//! (cuInit); errors are the driver's, for each caller to put in its words.

use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute};
use cudarc::driver::{DriverError, result};
use std::ffi::{CStr, c_char, c_int};

/// The CUDA version the driver supports, as the driver numbers it (13000 for 13.0).
pub fn version() -> Result<i32, DriverError> {
    let mut v: c_int = 0;
    // SAFETY: cuDriverGetVersion writes one int through a valid pointer.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(v)
}

/// The driver's version spelled as CUDA spells it: "13.0".
pub fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, v % 1000 / 10)
}

/// Attribute `a` of device `dev` (from cuDeviceGet).
pub fn attribute(dev: CUdevice, a: CUdevice_attribute) -> Result<i32, DriverError> {
    // SAFETY: a query of a device handle; an attribute or a device this
    // driver does not know is an error return, not undefined behaviour.
    unsafe { result::device::get_attribute(dev, a) }
}

/// Bytes of memory of device `dev`.
pub fn total_mem(dev: CUdevice) -> Result<usize, DriverError> {
    // SAFETY: as `attribute`.
    unsafe { result::device::total_mem(dev) }
}

/// Device `dev`'s PCI address as the driver spells it ("0000:18:00.0").
pub fn pci_bus_id(dev: CUdevice) -> Result<String, DriverError> {
    let mut buf = [0 as c_char; 32];
    // SAFETY: the buffer and its length match; the driver writes a
    // NUL-terminated string of at most that length.
    unsafe { sys::cuDeviceGetPCIBusId(buf.as_mut_ptr(), buf.len() as c_int, dev) }.result()?;
    // SAFETY: the buffer was zeroed and the driver NUL-terminates what it writes.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
}

/// The device at PCI address `id` (cuDeviceGetByPCIBusId).
pub fn device_at(id: &CStr) -> Result<CUdevice, DriverError> {
    let mut device: CUdevice = -1;
    // SAFETY: `device` is a live CUdevice the driver writes; `id` is a
    // NUL-terminated string that outlives the call.
    unsafe { sys::cuDeviceGetByPCIBusId(&mut device, id.as_ptr()) }.result()?;
    Ok(device)
}

/// Whether device `from`'s kernels and copies can reach device `to`'s memory.
pub fn can_access_peer(from: CUdevice, to: CUdevice) -> Result<bool, DriverError> {
    let mut can: c_int = 0;
    // SAFETY: a query of two device handles; the driver writes one int.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, from, to) }.result()?;
    Ok(can != 0)
}
