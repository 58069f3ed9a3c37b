from google.protobuf import descriptor_pb2 as _descriptor_pb2
from trainyard._proto.protoc_gen_openapiv2.options import openapiv2_pb2 as _openapiv2_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
OPENAPIV2_ENUM_FIELD_NUMBER: _ClassVar[int]
OPENAPIV2_FIELD_FIELD_NUMBER: _ClassVar[int]
OPENAPIV2_OPERATION_FIELD_NUMBER: _ClassVar[int]
OPENAPIV2_SCHEMA_FIELD_NUMBER: _ClassVar[int]
OPENAPIV2_SWAGGER_FIELD_NUMBER: _ClassVar[int]
OPENAPIV2_TAG_FIELD_NUMBER: _ClassVar[int]
openapiv2_enum: _descriptor.FieldDescriptor
openapiv2_field: _descriptor.FieldDescriptor
openapiv2_operation: _descriptor.FieldDescriptor
openapiv2_schema: _descriptor.FieldDescriptor
openapiv2_swagger: _descriptor.FieldDescriptor
openapiv2_tag: _descriptor.FieldDescriptor
