# The README's two commands:
#   make run    installs missing Debian packages, builds, deduplicates the sample corpus
#   make test   installs missing Debian packages, builds, runs the whole test suite
BUILD ?= build
JOBS  ?= $(shell nproc)
SAMPLE := data/sample/mmds-articles-2500.jsonl.zst

.PHONY: deps build run test clean

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

run: build
	$(BUILD)/neardup dedup $(SAMPLE) -o $(BUILD)/sample.dedup.jsonl \
	    --removed $(BUILD)/sample.removed.tsv --clusters $(BUILD)/sample.clusters.tsv
	@echo "kept records:    $(BUILD)/sample.dedup.jsonl"
	@echo "removed records: $(BUILD)/sample.removed.tsv"
	@head -5 $(BUILD)/sample.removed.tsv

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD)
