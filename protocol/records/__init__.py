"""RecordBatch v2: headers, records, compression, and recognition of legacy formats."""
