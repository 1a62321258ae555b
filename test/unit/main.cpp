//===- main.cpp - Catch2 entry point for fusec-unittests ------------------===//
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
