public enum StarlineQRModule {}
