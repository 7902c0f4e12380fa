# Cross-compiling for 64-bit Arm Linux (Graviton) on a Debian x86_64 machine: Debian's cross
# toolchain (crossbuild-essential-arm64) and the arm64 builds of runpool's libraries installed
# side by side with the host's (dpkg --add-architecture arm64; scripts/setup.sh does both when
# RUNPOOL_RELEASE_ARM64=1). No sysroot: multiarch keeps arm64 libraries in
# /usr/lib/aarch64-linux-gnu. Programs built for the target run under qemu-user.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static)
# pkg-config reads the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
