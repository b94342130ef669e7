// Entry point of the GoogleTest binaries that elaborate SystemC models. libsystemc calls
// sc_main; ours runs the tests. ctest runs each TEST in its own process (one elaboration per
// process is all SystemC 2.3 allows).
#include <cstdlib>

#include <gtest/gtest.h>
#include <systemc>

int sc_main(int argc, char* argv[]) {
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    sc_core::sc_report_handler::set_actions(sc_core::SC_WARNING, sc_core::SC_DO_NOTHING);
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

int main(int argc, char* argv[]) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    return sc_core::sc_elab_and_sim(argc, argv);
}
