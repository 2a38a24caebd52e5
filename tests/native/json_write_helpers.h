// Helpers of the JSON writer's tests (json_write_test, json_raw_test).
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "util/json_write.h"

// What write_pretty_json writes for `value`, big arrays over the CPUs from `parallel_from` elements.
inline std::string streamed(const nlohmann::json& value, size_t parallel_from) {
  std::FILE* file = std::tmpfile();
  BOOST_REQUIRE(file != nullptr);
  BOOST_REQUIRE(nsc::write_pretty_json(value, file, parallel_from));
  std::string text(static_cast<size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  BOOST_REQUIRE_EQUAL(std::fread(text.data(), 1, text.size(), file), text.size());
  std::fclose(file);
  return text;
}

// A random document (containers to depth 4) with strings and keys from `strings`; `all_numbers`:
// floating point and integers past INT64_MAX too (JsonText writes neither).
inline nlohmann::json random_value(std::mt19937& random, int depth, const std::vector<const char*>& strings,
                                   bool all_numbers = true) {
  unsigned kind = random() % (depth > 3 ? 6 : 8);
  if (!all_numbers && (kind == 4 || kind == 5)) kind = 2;
  switch (kind) {
    case 0: return nullptr;
    case 1: return random() % 2 == 0;
    case 2: return static_cast<int64_t>(random()) - (int64_t{1} << 31);
    case 3: return strings[random() % strings.size()];
    case 4: return std::uniform_real_distribution<double>(-1e6, 1e6)(random);
    case 5: return static_cast<uint64_t>(random()) << 32;
    case 6: {
      nlohmann::json array = nlohmann::json::array();
      for (size_t n = random() % 5; n > 0; --n) array.push_back(random_value(random, depth + 1, strings, all_numbers));
      return array;
    }
    default: {
      nlohmann::json object = nlohmann::json::object();
      for (size_t n = random() % 5; n > 0; --n)
        object[strings[random() % strings.size()]] = random_value(random, depth + 1, strings, all_numbers);
      return object;
    }
  }
}
