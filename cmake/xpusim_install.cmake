# What `cmake --install` puts under the prefix, so that an architect can bind the models into
# their own SystemC platform (docs/architecture.md, "The models as a library"):
#   include/xpusim/{traces,models,platform,analysis}/*.h   included as "models/matrix_unit.h"
#   lib/libxpusim_{traces,tracegen,models,platform,analysis}.a
#   lib/cmake/xpusim/   find_package(xpusim): xpusim::traces, xpusim::tracegen, xpusim::models,
#                       xpusim::platform, xpusim::analysis (each with its dependencies)
#   lib/pkgconfig/xpusim.pc   pkg-config --cflags --libs xpusim (the models and their base)
#   bin/   sim_main, xpu_analyze, xpu_sweep, xpu_trace, xpu_tracegen (side by side: xpu_analyze
#          and xpu_sweep find sim_main beside themselves)
#   share/xpusim/configs/   the platform descriptions
include(CMakePackageConfigHelpers)

set(XPU_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/xpusim)
set(xpu_exported xpusim_traces xpusim_tracegen xpusim_models xpusim_platform xpusim_analysis)
foreach(t IN LISTS xpu_exported)
  string(REPLACE "xpusim_" "" short ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${short})
endforeach()
install(TARGETS ${xpu_exported} EXPORT xpusimTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS sim_main xpu_analyze xpu_sweep xpu_trace xpu_tracegen RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir traces models platform analysis)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/xpusim/${dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "samples" EXCLUDE)
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/xpusim/configs)
install(EXPORT xpusimTargets NAMESPACE xpusim:: DESTINATION ${XPU_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/xpusimConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/xpusimConfig.cmake INSTALL_DESTINATION ${XPU_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/xpusimConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/xpusimConfig.cmake ${PROJECT_BINARY_DIR}/xpusimConfigVersion.cmake
        DESTINATION ${XPU_INSTALL_CMAKEDIR})
# The .pc file finds the prefix from its own folder (pkg-config's pcfiledir), so that
# `cmake --install --prefix P` works whatever prefix was configured.
file(RELATIVE_PATH XPU_PC_TO_PREFIX ${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(${PROJECT_SOURCE_DIR}/cmake/xpusim.pc.in ${PROJECT_BINARY_DIR}/xpusim.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/xpusim.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
