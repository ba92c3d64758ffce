//! GPU facts from the CUDA driver API (libcuda): what CUDA programs, NCCL
//! included, will see. Asked only on a live run, and only once the library
//! is known to load (cudarc panics when it does not).

use super::gpu_link::normalize_bus_id;
use super::sysfs::Known;
use crate::gpu::driver;
use crate::libs::Library;
use cudarc::driver::result::{self, DriverError};
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};

/// One device as CUDA numbers it.
pub struct CudaGpu {
    pub ordinal: i32,
    pub bus_id: String,
    pub name: Known<String>,
    pub uuid: Known<String>,
    pub memory_bytes: Known<u64>,
    pub compute_capability: Known<String>,
    pub gpu_direct_rdma: Known<bool>,
    pub dma_buf: Known<bool>,
}

pub struct CudaView {
    /// The driver's CUDA version ("13.0").
    pub version: Known<String>,
    pub gpus: Vec<CudaGpu>,
    /// cuDeviceCanAccessPeer, indexed by ordinal.
    pub peer: Vec<Vec<Known<bool>>>,
}

fn describe(e: DriverError) -> String {
    let name = e.error_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    match e.error_string() {
        Ok(s) => format!("{name}: {}", s.to_string_lossy()),
        Err(_) => name,
    }
}

fn known<T>(r: Result<T, DriverError>) -> Known<T> {
    r.map_err(describe).into()
}

pub fn query() -> Known<CudaView> {
    if !Library::Driver.loadable() {
        return Known::unknown("libcuda.so.1 (the driver's CUDA library) cannot be loaded");
    }
    if let Err(e) = result::init() {
        return Known::unknown(format!("cuInit failed: {}", describe(e)));
    }
    let version = known(driver::version()).map(driver::version_text);
    let count = match result::device::get_count() {
        Ok(n) => n,
        Err(e) => return Known::unknown(format!("cuDeviceGetCount failed: {}", describe(e))),
    };
    let devices: Vec<Known<sys::CUdevice>> = (0..count).map(|i| known(result::device::get(i))).collect();
    let gpus = devices.iter().zip(0..).filter_map(|(d, i)| d.value().map(|&d| device(i, d))).collect();
    let peer = devices.iter().map(|a| devices.iter().map(|b| can_access_peer(a, b)).collect()).collect();
    Known::Value(CudaView { version, gpus, peer })
}

fn device(ordinal: i32, dev: sys::CUdevice) -> CudaGpu {
    // `dev` came from cuDeviceGet after a successful cuInit.
    let attr = |a: Attr| known(driver::attribute(dev, a));
    let cc = attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR).and_then(|major| {
        attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).map(|minor| format!("{major}.{minor}"))
    });
    CudaGpu {
        ordinal,
        bus_id: bus_id(dev).unwrap_or_default(),
        name: known(result::device::get_name(dev)),
        uuid: known(result::device::get_uuid(dev)).map(|u| format_uuid(&u.bytes)),
        memory_bytes: known(driver::total_mem(dev)).map(|b| b as u64),
        compute_capability: cc,
        gpu_direct_rdma: attr(Attr::CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED).map(|v| v != 0),
        dma_buf: attr(Attr::CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED).map(|v| v != 0),
    }
}

fn bus_id(dev: sys::CUdevice) -> Option<String> {
    driver::pci_bus_id(dev).ok().map(|text| normalize_bus_id(&text))
}

fn can_access_peer(a: &Known<sys::CUdevice>, b: &Known<sys::CUdevice>) -> Known<bool> {
    let (Some(&a), Some(&b)) = (a.value(), b.value()) else {
        return Known::unknown("device not available");
    };
    if a == b {
        return Known::Value(true);
    }
    // Both devices came from cuDeviceGet.
    known(driver::can_access_peer(a, b))
}

/// nvidia-smi's spelling of a GPU UUID: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
fn format_uuid(bytes: &[std::ffi::c_char; 16]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{:02x}", *b as u8)).collect();
    format!("GPU-{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    #[test]
    fn uuid_spelling() {
        let bytes: [std::ffi::c_char; 16] = std::array::from_fn(|i| (i * 17) as u8 as std::ffi::c_char);
        assert_eq!(super::format_uuid(&bytes), "GPU-00112233-4455-6677-8899-aabbccddeeff");
    }
}
