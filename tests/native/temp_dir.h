// A temporary directory for a test, removed with everything in it at scope exit.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

struct TempDir {
  std::string path;
  explicit TempDir(const char* prefix = "ncclscope-test") {
    std::string pattern = std::string("/tmp/") + prefix + "-XXXXXX";
    path = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Writes text to path/name and returns the file's path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string file = path + "/" + name;
    std::ofstream(file) << text;
    return file;
  }
};
