/* SPDX-License-Identifier: GPL-2.0-or-later */
// make bench: a translation unit for `clang++ -O2 -c`, heavy enough in
// templates (regex, streams, containers) to keep the compiler busy for a few
// seconds in libLLVM and libclang-cpp: the program the cost table records.
#include <algorithm>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

std::map<std::string, std::vector<int>> table;

int matches(const std::string &s)
{
	std::regex r("a+b*");
	std::smatch m;

	return std::regex_search(s, m, r);
}

int joined()
{
	std::unordered_map<int, std::string> u;
	std::ostringstream o;

	for (int i = 0; i < 10; i++)
		u[i] = std::to_string(i);
	for (auto &p : u)
		o << p.second;
	return (int)o.str().size();
}

int sorted(std::vector<std::string> v)
{
	std::sort(v.begin(), v.end(), std::greater<std::string>());
	return (int)std::count_if(v.begin(), v.end(), [](const std::string &x) { return x.size() > 3; });
}
